#include "status.h"

namespace bp {

std::string_view statusCodeName(StatusCode code)
{
    switch (code) {
    case StatusCode::Ok: return "ok";
    case StatusCode::InvalidArgument: return "invalid_argument";
    case StatusCode::OutOfRange: return "out_of_range";
    case StatusCode::DeadlineExceeded: return "deadline_exceeded";
    case StatusCode::QueueFull: return "queue_full";
    case StatusCode::ShuttingDown: return "shutting_down";
    case StatusCode::NotFound: return "not_found";
    case StatusCode::Unavailable: return "unavailable";
    case StatusCode::ResourceExhausted: return "resource_exhausted";
    case StatusCode::Cancelled: return "cancelled";
    case StatusCode::Internal: return "internal";
    }
    return "unknown";
}

std::string Status::toString() const
{
    if (isOk())
        return "ok";
    std::string s(statusCodeName(m_code));
    s += ": ";
    s += m_message;
    return s;
}

} // namespace bp
