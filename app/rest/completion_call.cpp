#include "completion_call.h"

#include "http_reply.h"

#include "engine/tokenizer.h"

namespace bp::rest {

using nlohmann::json;

QByteArray CompletionCall::head()
{
    if (m_headSent)
        return {};
    m_headSent = true;
    return streamHead(HttpStatus::Ok, "text/event-stream", {{"Cache-Control", "no-cache"}});
}

QByteArray CompletionCall::event(const std::string &text, const std::string &finishReason,
                                 std::size_t completionTokens)
{
    json data = completionChunk(id, created, model, text, finishReason);
    if (!finishReason.empty())
        data["usage"] = completionUsage(promptTokens, completionTokens);
    const std::string sse = sseEvent(data);
    return chunk(QByteArray(sse.data(), qsizetype(sse.size())));
}

QByteArray CompletionCall::tokenPiece(TokenId token)
{
    QByteArray out = head();
    ++m_tokensSent;
    out += event(m_text.push(token));
    return out;
}

QByteArray CompletionCall::finishPiece(const Response &response)
{
    QByteArray out = head();
    // Tokens the backend did not report one by one arrive with the completion.
    for (std::size_t i = m_tokensSent; i < response.tokens.size(); ++i)
        out += tokenPiece(response.tokens[i]);
    const std::size_t generated = response.tokens.size();
    out += event(m_text.finish(), finishReason(generated, maxTokens), generated);
    const std::string done = sseDone();
    out += chunk(QByteArray(done.data(), qsizetype(done.size())));
    out += lastChunk();
    return out;
}

QByteArray CompletionCall::errorPiece(const Status &status)
{
    QByteArray out = head();
    const std::string sse = sseEvent(json{{"error",
                                           {{"message", status.message()},
                                            {"type", std::string(statusCodeName(status.code()))},
                                            {"code", int(httpStatusFor(status.code()))}}}});
    out += chunk(QByteArray(sse.data(), qsizetype(sse.size())));
    const std::string done = sseDone();
    out += chunk(QByteArray(done.data(), qsizetype(done.size())));
    out += lastChunk();
    return out;
}

json CompletionCall::object(const Response &response) const
{
    return completionObject(id, created, model, ByteTokenizer::decode(response.tokens),
                            finishReason(response.tokens.size(), maxTokens), promptTokens,
                            response.tokens.size());
}

} // namespace bp::rest
