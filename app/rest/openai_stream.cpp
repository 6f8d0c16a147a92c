#include "openai_stream.h"

#include "http_reply.h"

#include "engine/core/tokenizer.h"

namespace bp::rest {

using nlohmann::json;

OpenAiCall::OpenAiCall(const OpenAiRequest &request, std::string id, std::int64_t created, std::string model)
    : m_endpoint(request.endpoint), m_id(std::move(id)), m_created(created), m_model(std::move(model)),
      m_maxTokens(request.maxTokens), m_stream(request.stream), m_tokenizer(request.tokenizer),
      m_includeUsage(request.includeUsage),
      m_continuousUsage(request.includeUsage && request.continuousUsage), m_choices(request.prompts.size())
{
    for (std::size_t i = 0; i < request.prompts.size(); ++i) {
        m_choices[i].promptTokens = request.prompts[i].tokens.size();
        m_choices[i].text = TokenTextStream(tokenizer());
    }
}

const TextTokenizer &OpenAiCall::tokenizer() const
{
    return m_tokenizer ? *m_tokenizer : ByteTokenizer::instance();
}

QByteArray OpenAiCall::head()
{
    if (m_headSent)
        return {};
    m_headSent = true;
    return streamHead(HttpStatus::Ok, "text/event-stream", {{"Cache-Control", "no-cache"}});
}

json OpenAiCall::usage(bool soFar) const
{
    std::size_t prompt = 0, completion = 0;
    for (const Choice &c : m_choices) {
        prompt += c.promptTokens;
        completion += soFar ? c.tokensSent : c.generated;
    }
    return completionUsage(prompt, completion);
}

QByteArray OpenAiCall::frame(const json &data) const
{
    const std::string sse = sseEvent(data);
    return chunk(QByteArray(sse.data(), qsizetype(sse.size())));
}

QByteArray OpenAiCall::event(int choice, const std::string &text, const std::string &finishReason)
{
    Choice &c = m_choices[std::size_t(choice)];
    json data;
    if (m_endpoint == OpenAiEndpoint::Chat) {
        json delta = json::object();
        if (!text.empty() || finishReason.empty())
            delta["content"] = text;
        data = chatChunk(m_id, m_created, m_model, choice, std::move(delta), finishReason);
    } else {
        data = completionChunk(m_id, m_created, m_model, choice, text, finishReason);
    }
    if (m_includeUsage)
        data["usage"] = m_continuousUsage ? usage(true) : json(nullptr);
    else if (!finishReason.empty() && m_closedChoices + 1 == choices() && !c.closed)
        data["usage"] = usage(false); // no include_usage: the last closing chunk carries it
    return frame(data);
}

QByteArray OpenAiCall::roleEvent(int choice)
{
    Choice &c = m_choices[std::size_t(choice)];
    if (m_endpoint != OpenAiEndpoint::Chat || c.roleSent)
        return {};
    c.roleSent = true;
    json role = chatChunk(m_id, m_created, m_model, choice, json{{"role", "assistant"}, {"content", ""}});
    if (m_includeUsage)
        role["usage"] = m_continuousUsage ? usage(true) : json(nullptr);
    return frame(role);
}

QByteArray OpenAiCall::tokenPiece(int choice, TokenId token)
{
    QByteArray out = head();
    Choice &c = m_choices[std::size_t(choice)];
    out += roleEvent(choice);
    ++c.tokensSent;
    out += event(choice, c.text.push(token));
    return out;
}

QByteArray OpenAiCall::choicePiece(int choice, const Response &response)
{
    QByteArray out = head();
    Choice &c = m_choices[std::size_t(choice)];
    // Tokens the backend did not report one by one arrive with the completion.
    for (std::size_t i = c.tokensSent; i < response.tokens.size(); ++i)
        out += tokenPiece(choice, response.tokens[i]);
    out += roleEvent(choice); // no token at all: the role still opens the choice
    c.generated = response.tokens.size();
    out += event(choice, c.text.finish(), finishReason(c.generated, m_maxTokens));
    c.closed = true;
    ++m_closedChoices;
    return out;
}

QByteArray OpenAiCall::endPiece()
{
    QByteArray out = head();
    if (m_includeUsage)
        out += frame(usageChunk(m_endpoint, m_id, m_created, m_model, usage(false)));
    const std::string done = sseDone();
    out += chunk(QByteArray(done.data(), qsizetype(done.size())));
    out += lastChunk();
    m_ended = true;
    return out;
}

QByteArray OpenAiCall::errorPiece(const Status &status)
{
    QByteArray out = head();
    out += frame(openAiError(httpStatusFor(status.code()), status.message(), statusCodeName(status.code())));
    const std::string done = sseDone();
    out += chunk(QByteArray(done.data(), qsizetype(done.size())));
    out += lastChunk();
    m_ended = true;
    return out;
}

json OpenAiCall::object(const std::vector<Response> &responses) const
{
    std::vector<OpenAiChoice> choices;
    std::size_t prompt = 0, completion = 0;
    for (std::size_t i = 0; i < responses.size() && i < m_choices.size(); ++i) {
        const std::vector<TokenId> &tokens = responses[i].tokens;
        choices.push_back({tokenizer().decode(tokens), finishReason(tokens.size(), m_maxTokens)});
        prompt += m_choices[i].promptTokens;
        completion += tokens.size();
    }
    return completionObject(m_endpoint, m_id, m_created, m_model, choices,
                            completionUsage(prompt, completion));
}

} // namespace bp::rest
