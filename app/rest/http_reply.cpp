#include "http_reply.h"

#include <QHash>
#include <QMetaEnum>
#include <QTcpSocket>

#include <nlohmann/json.hpp>

namespace bp::rest {

HttpReply &HttpReply::withHeader(QByteArray name, QByteArray value)
{
    headers.emplace_back(std::move(name), std::move(value));
    return *this;
}

QByteArray HttpReply::header(const QByteArray &name) const
{
    for (const auto &[n, v] : headers)
        if (n.compare(name, Qt::CaseInsensitive) == 0)
            return v;
    return {};
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
    // nginx's "client closed request": the client is gone, so this reply is
    // normally never written; it only names the outcome in JSON and logs.
    case StatusCode::Cancelled: return kClientClosedRequest;
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
    // What QHttpServerResponder::write(data, headers, status) writes in 6.4
    // (status line, headers, Content-Length, body), with a header list of any
    // length, in one write to the socket instead of four per header.
    QByteArray out;
    out.reserve(128 + r.body.size());
    out += statusLine(r.status);
    out += "Content-Type: " + r.contentType + "\r\n";
    for (const auto &[name, value] : r.headers)
        out += name + ": " + value + "\r\n";
    out += "Content-Length: " + QByteArray::number(r.body.size()) + "\r\n\r\n";
    out += r.body;
    responder.socket()->write(out);
}

QByteArray streamHead(HttpStatus status, const QByteArray &contentType,
                      const std::vector<std::pair<QByteArray, QByteArray>> &headers)
{
    QByteArray out = statusLine(status);
    out += "Content-Type: " + contentType + "\r\n";
    for (const auto &[name, value] : headers)
        out += name + ": " + value + "\r\n";
    out += "Transfer-Encoding: chunked\r\n\r\n";
    return out;
}

QByteArray chunk(const QByteArray &bytes)
{
    if (bytes.isEmpty())
        return {}; // an empty chunk would end the body
    return QByteArray::number(bytes.size(), 16) + "\r\n" + bytes + "\r\n";
}

QByteArray lastChunk()
{
    return "0\r\n\r\n";
}

QByteArray statusLine(HttpStatus status)
{
    // Built once: every status the enum names, "HTTP/1.1 413 Payload Too Large\r\n".
    static const QHash<int, QByteArray> lines = [] {
        QHash<int, QByteArray> out;
        const QMetaEnum names = QMetaEnum::fromType<HttpStatus>();
        for (int i = 0; i < names.keyCount(); ++i) {
            QByteArray reason = names.key(i); // "PayloadTooLarge" -> "Payload Too Large"
            for (qsizetype j = reason.size() - 1; j > 0; --j)
                if (QChar::isUpper(reason[j]) && !QChar::isUpper(reason[j - 1]))
                    reason.insert(j, ' ');
            if (names.value(i) == 200)
                reason = "OK";
            out.insert(names.value(i),
                       "HTTP/1.1 " + QByteArray::number(names.value(i)) + ' ' + reason + "\r\n");
        }
        out.insert(int(kClientClosedRequest), "HTTP/1.1 499 Client Closed Request\r\n");
        return out;
    }();
    const auto it = lines.constFind(int(status));
    return it != lines.cend() ? *it : "HTTP/1.1 " + QByteArray::number(int(status)) + "\r\n";
}

QByteArray rawErrorResponse(HttpStatus status, std::string_view message)
{
    const std::string body = nlohmann::json{{"error", message}}.dump();
    QByteArray out;
    out += statusLine(status);
    out += "Content-Type: application/json\r\nConnection: close\r\n";
    out += "Content-Length: " + QByteArray::number(qsizetype(body.size())) + "\r\n\r\n";
    out += QByteArray(body.data(), qsizetype(body.size()));
    return out;
}

} // namespace bp::rest
