#include "backend.h"

#include <algorithm>
#include <string>
#include <vector>

namespace bp {

Status checkDistinctSequences(const std::vector<StepItem> &items)
{
    auto twice = [](std::uint64_t sequence) {
        return Status(StatusCode::InvalidArgument,
                      "sequence " + std::to_string(sequence) + " appears twice in one step");
    };
    // Every step is checked: a step's few sequences without allocating, a
    // large one sorted.
    constexpr std::size_t kCompareEach = 32;
    if (items.size() <= kCompareEach) {
        for (std::size_t i = 1; i < items.size(); ++i)
            for (std::size_t j = 0; j < i; ++j)
                if (items[j].sequence == items[i].sequence)
                    return twice(items[i].sequence);
        return Status::ok();
    }
    std::vector<std::uint64_t> ids;
    ids.reserve(items.size());
    for (const StepItem &item : items)
        ids.push_back(item.sequence);
    std::sort(ids.begin(), ids.end());
    if (const auto same = std::adjacent_find(ids.begin(), ids.end()); same != ids.end())
        return twice(*same);
    return Status::ok();
}

} // namespace bp
