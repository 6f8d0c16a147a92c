// One HTTP answer as a value: status, body, content type and the few extra
// headers the endpoint uses. Built anywhere on the server thread, written
// once through the request's QHttpServerResponder.
#pragma once

#include "engine/status.h"

#include <QByteArray>
#include <QHttpServerResponder>

#include <nlohmann/json_fwd.hpp>

#include <string_view>
#include <utility>
#include <vector>

namespace bp::rest {

using HttpStatus = QHttpServerResponder::StatusCode;
// 499 (nginx): the client closed the connection before the reply. Not in Qt's enum.
inline constexpr HttpStatus kClientClosedRequest = HttpStatus(499);

struct HttpReply {
    HttpStatus status = HttpStatus::Ok;
    QByteArray body;
    QByteArray contentType = "application/json";
    // Extra headers (Retry-After, Allow, WWW-Authenticate, Server-Timing, ...).
    std::vector<std::pair<QByteArray, QByteArray>> headers;

    HttpReply &withHeader(QByteArray name, QByteArray value);
    // The value of an extra header, empty when absent.
    QByteArray header(const QByteArray &name) const;
};

HttpReply jsonReply(const nlohmann::json &body, HttpStatus status = HttpStatus::Ok);
// {"error": message}
HttpReply errorReply(HttpStatus status, std::string_view message);
// The engine's Status mapped to HTTP: InvalidArgument/OutOfRange 400,
// NotFound 404, QueueFull 429 (+ Retry-After), DeadlineExceeded 504,
// ShuttingDown/Unavailable/ResourceExhausted 503, Cancelled 499 (the client
// is gone: only logs and JSON see it), Internal 500.
HttpReply errorReply(const Status &status);
HttpStatus httpStatusFor(StatusCode code);

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
QByteArray rawErrorResponse(HttpStatus status, std::string_view message);

} // namespace bp::rest
