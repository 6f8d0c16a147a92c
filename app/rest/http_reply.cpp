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

HttpReply &HttpReply::withErrorCode(std::string code)
{
    if (error)
        error->code = std::move(code);
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
    HttpReply r = jsonReply(nlohmann::json{{"error", message}}, status);
    r.error = ErrorDetail{std::string(message), errorCodeFor(status)};
    return r;
}

std::string errorCodeFor(HttpStatus status)
{
    switch (int(status)) {
    case 400: return "invalid_request";
    case 401: return "invalid_api_key";
    case 403: return "host_not_allowed";
    case 404: return "not_found";
    case 405: return "method_not_allowed";
    case 411: return "length_required";
    case 413: return "payload_too_large";
    case 429: return "too_many_requests";
    case 431: return "headers_too_large";
    case 501: return "not_implemented";
    case 503: return "unavailable";
    default: return "error";
    }
}

namespace {
std::string openAiType(HttpStatus status)
{
    const int s = int(status);
    if (s == 401)
        return "authentication_error";
    if (s == 403)
        return "permission_error";
    if (s == 429)
        return "rate_limit_error";
    if (s == 504)
        return "timeout_error";
    if (s >= 500)
        return "server_error";
    return "invalid_request_error";
}

bool isFieldChar(char c)
{
    return (c >= 'a' && c <= 'z') || c == '_' || (c >= '0' && c <= '9');
}

// The request field an error message is about: "field 'max_tokens' ...",
// or a message that starts with a field name followed by '[', '.', ' ' or ':'
// ("prompt[2] = ...", "messages[0].role ...", "max_tokens 0 is below 1").
nlohmann::json paramOf(std::string_view message)
{
    static const std::string_view known[] = {
        "prompt",  "messages",    "max_tokens",      "max_completion_tokens",
        "model",   "stream",      "stream_options",  "n",
        "best_of", "echo",        "logprobs",        "top_logprobs",
        "tools",   "tool_choice", "response_format", "suffix"};
    if (message.rfind("unknown model '", 0) == 0)
        return "model";
    constexpr std::string_view marker = "field '";
    if (const auto at = message.find(marker); at != std::string_view::npos) {
        const auto begin = at + marker.size();
        const auto end = message.find('\'', begin);
        if (end != std::string_view::npos && end > begin)
            return std::string(message.substr(begin, end - begin));
    }
    std::size_t n = 0;
    while (n < message.size() && isFieldChar(message[n]))
        ++n;
    if (n == 0 || n == message.size() || std::string_view("[. :").find(message[n]) == std::string_view::npos)
        return nullptr;
    const std::string_view word = message.substr(0, n);
    for (std::string_view k : known)
        if (word == k)
            return std::string(word);
    return nullptr;
}
} // namespace

nlohmann::json openAiError(HttpStatus status, std::string_view message, std::string_view code)
{
    return nlohmann::json{{"error",
                           {{"message", message},
                            {"type", openAiType(status)},
                            {"param", paramOf(message)},
                            {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}}}};
}

HttpReply styled(HttpReply reply, ErrorStyle style)
{
    if (style != ErrorStyle::OpenAi || !reply.error)
        return reply;
    const std::string text = openAiError(reply.status, reply.error->message, reply.error->code)
                                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    reply.body = QByteArray(text.data(), qsizetype(text.size()));
    reply.contentType = "application/json";
    return reply;
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
    r.error->code = std::string(statusCodeName(status.code()));
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

QByteArray rawErrorResponse(HttpStatus status, std::string_view message, ErrorStyle style)
{
    const std::string body = style == ErrorStyle::OpenAi
                                 ? openAiError(status, message, errorCodeFor(status)).dump()
                                 : nlohmann::json{{"error", message}}.dump();
    QByteArray out;
    out += statusLine(status);
    out += "Content-Type: application/json\r\nConnection: close\r\n";
    out += "Content-Length: " + QByteArray::number(qsizetype(body.size())) + "\r\n\r\n";
    out += QByteArray(body.data(), qsizetype(body.size()));
    return out;
}

} // namespace bp::rest
