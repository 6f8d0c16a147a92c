// Errors as values inside the engine. Every failure that can reach an
// operator carries a code (mapped to an HTTP status by the REST layer) and a
// human-readable message; nothing is swallowed and no exception crosses the
// engine boundary.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace bp {

enum class StatusCode {
    Ok,
    InvalidArgument,   // malformed input: empty sequence, bad knob value, ...
    OutOfRange,        // input longer than the model allows, token outside the vocabulary
    DeadlineExceeded,  // the request's deadline passed before it could run
    QueueFull,         // admission queue at capacity; retry later
    ShuttingDown,      // engine stopping: not accepting, or queued work failed on shutdown
    NotFound,          // unknown model, file, id
    Unavailable,       // resource missing at run time (e.g. CUDA without a GPU)
    ResourceExhausted, // out of memory while running a batch
    Cancelled,         // the client went away or cancelled the request (REST: 499, never written)
    Internal,          // a bug or an unexpected backend failure
};

std::string_view statusCodeName(StatusCode code);

class [[nodiscard]] Status {
public:
    Status() = default;
    Status(StatusCode code, std::string message) : m_code(code), m_message(std::move(message)) {}

    static Status ok() { return {}; }

    bool isOk() const { return m_code == StatusCode::Ok; }
    explicit operator bool() const { return isOk(); }
    StatusCode code() const { return m_code; }
    const std::string &message() const { return m_message; }

    // "queue_full: admission queue is full (4096 requests)"
    std::string toString() const;

private:
    StatusCode m_code = StatusCode::Ok;
    std::string m_message;
};

} // namespace bp
