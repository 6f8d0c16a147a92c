// One HTTP answer as a value: status, body, content type and the few extra
// headers the endpoint uses. Built anywhere on the server thread, written
// once through the request's QHttpServerResponder.
//
// Error shapes: BatchPilot's own and the OIP routes answer
// {"error": "message"}; the OpenAI routes answer OpenAI's error object
// {"error": {"message", "type", "param", "code"}}. Every error reply keeps
// its message and code (HttpReply::error), and the ticket of a request on an
// OpenAI route re-renders it (ErrorStyle, connection_queue.h), so no path
// that answers an error can forget the OpenAI shape.
#pragma once

#include "engine/core/status.h"

#include <QByteArray>
#include <QHttpServerResponder>

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bp::rest {

using HttpStatus = QHttpServerResponder::StatusCode;
// 499 (nginx): the client closed the connection before the reply. Not in Qt's enum.
inline constexpr HttpStatus kClientClosedRequest = HttpStatus(499);

enum class ErrorStyle { Plain, OpenAi };

// What an error reply says, kept beside its rendered body.
struct ErrorDetail {
    std::string message;
    // Machine-readable: the engine status name ("queue_full",
    // "invalid_argument", ...) or the HTTP layer's own ("invalid_api_key",
    // "method_not_allowed", "model_not_found", ...).
    std::string code;
};

struct HttpReply {
    HttpStatus status = HttpStatus::Ok;
    QByteArray body;
    QByteArray contentType = "application/json";
    // Extra headers (Retry-After, Allow, WWW-Authenticate, Server-Timing, ...).
    std::vector<std::pair<QByteArray, QByteArray>> headers;

    HttpReply &withHeader(QByteArray name, QByteArray value);
    // The value of an extra header, empty when absent.
    QByteArray header(const QByteArray &name) const;

    // Set by errorReply(); empty for a success.
    std::optional<ErrorDetail> error;
    // Replaces the error's code (errorReply() derives one from the status).
    HttpReply &withErrorCode(std::string code);
};

HttpReply jsonReply(const nlohmann::json &body, HttpStatus status = HttpStatus::Ok);
// {"error": message}; the code is the HTTP layer's name for `status`
// (errorCodeFor).
HttpReply errorReply(HttpStatus status, std::string_view message);
// The engine's Status mapped to HTTP: InvalidArgument/OutOfRange 400,
// NotFound 404, QueueFull 429 (+ Retry-After), DeadlineExceeded 504,
// ShuttingDown/Unavailable/ResourceExhausted 503, Cancelled 499 (the client
// is gone: only logs and JSON see it), Internal 500.
HttpReply errorReply(const Status &status);
HttpStatus httpStatusFor(StatusCode code);
// The code of an error the HTTP layer answers itself: 401 "invalid_api_key",
// 403 "host_not_allowed", 404 "not_found", 405 "method_not_allowed",
// 411 "length_required", 413 "payload_too_large", 429 "too_many_requests",
// 431 "headers_too_large", 501 "not_implemented" (a PDF report in a build
// without Qt Gui), 503 "unavailable", else "error".
std::string errorCodeFor(HttpStatus status);

// The OpenAI error object for an error answered with `status`:
//   {"error": {"message", "type", "param", "code"}}
// type: 401 authentication_error, 403 permission_error, 429
// rate_limit_error, 504 timeout_error, other 5xx server_error, other 4xx
// invalid_request_error. param: the request field the message names
// ("field 'max_tokens' ...", "prompt[2] ...", "messages[0].content ...",
// "unknown model ..."), else null.
nlohmann::json openAiError(HttpStatus status, std::string_view message, std::string_view code);
// The reply rendered in `style` (OpenAi: its error as an OpenAI error
// object; anything else unchanged).
HttpReply styled(HttpReply reply, ErrorStyle style);
// Writes `reply` through the responder (Content-Type, Content-Length, the
// extra headers, the body).
void writeReply(QHttpServerResponder &responder, const HttpReply &reply);

// A streamed answer (server-sent events), HTTP/1.1 chunked: the head
// (status line, Content-Type, the extra headers, Transfer-Encoding:
// chunked), each piece framed by chunk(), then lastChunk(). The connection
// stays open for the next request.
QByteArray streamHead(HttpStatus status, const QByteArray &contentType,
                      const std::vector<std::pair<QByteArray, QByteArray>> &headers = {});
QByteArray chunk(const QByteArray &bytes);
QByteArray lastChunk();

// "HTTP/1.1 429 Too Many Requests\r\n"
QByteArray statusLine(HttpStatus status);

// "HTTP/1.1 413 Payload Too Large\r\n..." with Connection: close, for the
// connection guard that answers before Qt has parsed a request.
QByteArray rawErrorResponse(HttpStatus status, std::string_view message,
                            ErrorStyle style = ErrorStyle::Plain);

} // namespace bp::rest
