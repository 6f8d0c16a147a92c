#include "store_types.h"

#include "engine/metrics/snapshot.h"

#include <chrono>

namespace bp {

std::int64_t wallClockMicros()
{
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

std::optional<StatusCode> parseStatusCode(std::string_view name)
{
    for (int i = 0; i < kStatusCodeCount; ++i)
        if (statusCodeName(StatusCode(i)) == name)
            return StatusCode(i);
    return std::nullopt;
}

std::optional<DispatchReason> parseDispatchReason(std::string_view name)
{
    // Walks the enum until its name table ends, so reasons added later parse too.
    for (int i = 0; i < 64; ++i) {
        const std::string_view n = dispatchReasonName(DispatchReason(i));
        if (n == "unknown")
            break;
        if (n == name)
            return DispatchReason(i);
    }
    return std::nullopt;
}

} // namespace bp
