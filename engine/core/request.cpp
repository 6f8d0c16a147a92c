#include "request.h"

namespace bp {

std::string_view dispatchReasonName(DispatchReason reason)
{
    switch (reason) {
    case DispatchReason::Single: return "single";
    case DispatchReason::Full: return "full";
    case DispatchReason::DelayExpired: return "delay_expired";
    case DispatchReason::StaticFull: return "static_full";
    case DispatchReason::Drain: return "drain";
    case DispatchReason::CacheHit: return "cache_hit";
    }
    return "unknown";
}

} // namespace bp
