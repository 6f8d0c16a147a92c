#include "backend.h"

#include <unordered_set>

namespace bp {

Status checkDistinctSequences(const std::vector<StepItem> &items)
{
    std::unordered_set<std::uint64_t> seen;
    for (const StepItem &item : items)
        if (!seen.insert(item.sequence).second)
            return Status(StatusCode::InvalidArgument,
                          "sequence " + std::to_string(item.sequence) + " appears twice in one step");
    return Status::ok();
}

} // namespace bp
