#include "http_reply.h"

#include <QMetaEnum>

#include <nlohmann/json.hpp>

namespace bp::rest {

HttpReply &HttpReply::withHeader(QByteArray name, QByteArray value)
{
    if (extraName.isEmpty()) {
        extraName = std::move(name);
        extraValue = std::move(value);
    } else {
        Q_ASSERT(extraName2.isEmpty());
        extraName2 = std::move(name);
        extraValue2 = std::move(value);
    }
    return *this;
}

HttpReply jsonReply(const nlohmann::json &body, HttpStatus status)
{
    HttpReply r;
    r.status = status;
    // Invalid UTF-8 (cannot come from our own strings, but be safe) is replaced, not thrown.
    const std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    r.body = QByteArray(text.data(), qsizetype(text.size()));
    return r;
}

HttpReply errorReply(HttpStatus status, std::string_view message)
{
    return jsonReply(nlohmann::json{{"error", message}}, status);
}

HttpStatus httpStatusFor(StatusCode code)
{
    switch (code) {
    case StatusCode::Ok: return HttpStatus::Ok;
    case StatusCode::InvalidArgument:
    case StatusCode::OutOfRange: return HttpStatus::BadRequest;
    case StatusCode::NotFound: return HttpStatus::NotFound;
    case StatusCode::QueueFull: return HttpStatus::TooManyRequests;
    case StatusCode::DeadlineExceeded: return HttpStatus::GatewayTimeout;
    case StatusCode::ShuttingDown:
    case StatusCode::Unavailable:
    case StatusCode::ResourceExhausted: return HttpStatus::ServiceUnavailable;
    case StatusCode::Internal: return HttpStatus::InternalServerError;
    }
    return HttpStatus::InternalServerError;
}

HttpReply errorReply(const Status &status)
{
    HttpReply r = errorReply(httpStatusFor(status.code()), status.message());
    // The queue drains in milliseconds at any sane load; one second is the
    // smallest value Retry-After can express.
    if (status.code() == StatusCode::QueueFull)
        r.withHeader("Retry-After", "1");
    return r;
}

void writeReply(QHttpServerResponder &responder, const HttpReply &r)
{
    static const QByteArray contentType = "Content-Type";
    if (r.extraName.isEmpty())
        responder.write(r.body, {{contentType, r.contentType}}, r.status);
    else if (r.extraName2.isEmpty())
        responder.write(r.body, {{contentType, r.contentType}, {r.extraName, r.extraValue}}, r.status);
    else
        responder.write(r.body,
                        {{contentType, r.contentType}, {r.extraName, r.extraValue}, {r.extraName2, r.extraValue2}},
                        r.status);
}

QByteArray rawErrorResponse(HttpStatus status, std::string_view message)
{
    const std::string body = nlohmann::json{{"error", message}}.dump();
    static const QMetaEnum names = QMetaEnum::fromType<HttpStatus>();
    // "PayloadTooLarge" -> "Payload Too Large"
    QByteArray reason = names.valueToKey(int(status));
    for (qsizetype i = reason.size() - 1; i > 0; --i)
        if (QChar::isUpper(reason[i]) && !QChar::isUpper(reason[i - 1]))
            reason.insert(i, ' ');
    QByteArray out;
    out += "HTTP/1.1 " + QByteArray::number(int(status)) + ' ' + reason + "\r\n";
    out += "Content-Type: application/json\r\nConnection: close\r\n";
    out += "Content-Length: " + QByteArray::number(qsizetype(body.size())) + "\r\n\r\n";
    out += QByteArray(body.data(), qsizetype(body.size()));
    return out;
}

} // namespace bp::rest
