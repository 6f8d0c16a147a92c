#include "remote_codec.h"

#include <QList>
#include <QUrl>

#include <nlohmann/json.hpp>

namespace bp::remote {

std::optional<Protocol> parseProtocol(const QString &name)
{
    if (name == QLatin1String("oip"))
        return Protocol::Oip;
    if (name == QLatin1String("openai"))
        return Protocol::OpenAi;
    if (name == QLatin1String("openai-chat"))
        return Protocol::OpenAiChat;
    return std::nullopt;
}

QString protocolName(Protocol protocol)
{
    switch (protocol) {
    case Protocol::Oip: return QStringLiteral("oip");
    case Protocol::OpenAi: return QStringLiteral("openai");
    case Protocol::OpenAiChat: return QStringLiteral("openai-chat");
    }
    return QStringLiteral("oip");
}

QString protocolNames()
{
    return QStringLiteral("oip|openai|openai-chat");
}

bool isStreaming(Protocol protocol)
{
    return protocol != Protocol::Oip;
}

QByteArray routeFor(Protocol protocol, const QString &model)
{
    switch (protocol) {
    case Protocol::Oip: return "/v2/models/" + QUrl::toPercentEncoding(model) + "/infer";
    case Protocol::OpenAi: return "/v1/completions";
    case Protocol::OpenAiChat: return "/v1/chat/completions";
    }
    return {};
}

ServerDialect dialectFor(const std::string &server)
{
    ServerDialect d;
    if (server == "tgi")
        d.textPrompt = true;
    if (server == "vllm" || server == "sglang" || server == "llamacpp")
        d.ignoreEos = true;
    if (server == "vllm")
        d.minTokens = true;
    if (server == "llamacpp")
        d.tokenCounts = true;
    return d;
}

std::string describe(const ServerDialect &d, Protocol protocol)
{
    std::string out;
    auto add = [&out](const char *what) { out += (out.empty() ? "" : ", ") + std::string(what); };
    if (d.textPrompt && protocol == Protocol::OpenAi)
        add("the completions prompt as text, one word per token");
    if (d.ignoreEos && isStreaming(protocol))
        add("ignore_eos: true");
    if (d.minTokens && isStreaming(protocol))
        add("min_tokens = max_tokens");
    if (d.tokenCounts && isStreaming(protocol))
        add("timings_per_token: true");
    return out;
}

QByteArray requestBody(Protocol protocol, const Request &request, const QString &model,
                       const ServerDialect &dialect)
{
    switch (protocol) {
    case Protocol::Oip: return oipInferBody(request);
    case Protocol::OpenAi: return openAiCompletionBody(request, model, dialect);
    case Protocol::OpenAiChat: return openAiChatBody(request, model, dialect);
    }
    return {};
}

namespace {

void appendIds(QByteArray &out, const std::vector<TokenId> &tokens)
{
    out += '[';
    for (std::size_t i = 0; i < tokens.size(); ++i) {
        if (i)
            out += ',';
        out += QByteArray::number(tokens[i]);
    }
    out += ']';
}

// The dialect's sampling fields, after max_tokens (or max_completion_tokens).
void appendSampling(QByteArray &out, const ServerDialect &d, int maxTokens)
{
    if (d.ignoreEos)
        out += ",\"ignore_eos\":true";
    if (d.minTokens)
        out += ",\"min_tokens\":" + QByteArray::number(maxTokens);
    if (d.tokenCounts)
        out += ",\"timings_per_token\":true";
    if (d.slot >= 0)
        out += ",\"id_slot\":" + QByteArray::number(d.slot);
}

} // namespace

QByteArray oipInferBody(const Request &r)
{
    // Written by hand rather than through a JSON tree: at tens of thousands
    // of requests per second the client's own cost matters.
    QByteArray out;
    out.reserve(int(96 + r.tokens.size() * 6));
    out += "{\"id\":\"" + QByteArray::number(qulonglong(r.id)) + "\",";
    if (r.maxNewTokens > 0)
        out += "\"parameters\":{\"max_new_tokens\":" + QByteArray::number(r.maxNewTokens) + "},";
    out += "\"inputs\":[{\"name\":\"input_ids\",\"datatype\":\"INT64\",\"shape\":[1," +
           QByteArray::number(qulonglong(r.tokens.size())) + "],\"data\":";
    appendIds(out, r.tokens);
    out += "}]}";
    return out;
}

QByteArray openAiCompletionBody(const Request &r, const QString &model, const ServerDialect &dialect)
{
    QByteArray out;
    out.reserve(int(128 + r.tokens.size() * 6));
    out += "{\"model\":" + QByteArray::fromStdString(nlohmann::json(model.toStdString()).dump()) +
           ",\"prompt\":";
    if (dialect.textPrompt)
        out += '"' + chatText(r.tokens) + '"'; // letters and spaces: nothing to escape
    else
        appendIds(out, r.tokens);
    const int maxTokens = std::max(1, r.maxNewTokens);
    out += ",\"max_tokens\":" + QByteArray::number(maxTokens);
    appendSampling(out, dialect, maxTokens);
    out += ",\"stream\":true}";
    return out;
}

QByteArray chatText(const std::vector<TokenId> &tokens)
{
    QByteArray out;
    out.reserve(qsizetype(tokens.size() * 2));
    for (TokenId t : tokens) {
        out += char('a' + (std::uint32_t(t) % 26u));
        out += ' ';
    }
    return out;
}

QByteArray openAiChatBody(const Request &r, const QString &model, const ServerDialect &dialect)
{
    // The shape vLLM's `bench serve --backend openai-chat` sends
    // (vllm/benchmarks/lib/endpoint_request_func.py).
    QByteArray out;
    out.reserve(int(192 + r.tokens.size() * 2));
    const int maxTokens = std::max(1, r.maxNewTokens);
    out += "{\"model\":" + QByteArray::fromStdString(nlohmann::json(model.toStdString()).dump()) +
           ",\"messages\":[{\"role\":\"user\",\"content\":\"" + chatText(r.tokens) +
           "\"}],\"max_completion_tokens\":" + QByteArray::number(maxTokens);
    appendSampling(out, dialect, maxTokens);
    out += ",\"stream\":true,\"stream_options\":{\"include_usage\":true}}";
    return out;
}

StatusCode statusForHttp(int s)
{
    if (s >= 200 && s < 300)
        return StatusCode::Ok;
    switch (s) {
    case 400:
    case 422: return StatusCode::InvalidArgument;
    case 404: return StatusCode::NotFound;
    case 413: return StatusCode::OutOfRange;
    case 429: return StatusCode::QueueFull;
    case 503: return StatusCode::Unavailable;
    case 408:
    case 504: return StatusCode::DeadlineExceeded;
    default: return StatusCode::Internal;
    }
}

OipAnswer parseOipAnswer(const QByteArray &body)
{
    OipAnswer a;
    auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("outputs") || !j["outputs"].is_array()) {
        a.error = QStringLiteral("not an OIP inference answer: %1").arg(QString::fromUtf8(body.left(120)));
        return a;
    }
    for (const auto &o : j["outputs"]) {
        if (!o.is_object())
            continue;
        const std::string name = o.value("name", "");
        if (name == "output_lengths" && o.contains("data") && o["data"].is_array() && !o["data"].empty() &&
            o["data"][0].is_number())
            return OipAnswer{o["data"][0].get<int>(), {}};
        if (name == "output_ids" && o.contains("shape") && o["shape"].is_array() && !o["shape"].empty() &&
            o["shape"].back().is_number())
            a.outputTokens = o["shape"].back().get<int>();
    }
    return a;
}

QString errorText(const QByteArray &body)
{
    auto j = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
    if (!j.is_discarded() && j.is_object() && j.contains("error")) {
        const auto &e = j["error"];
        if (e.is_string())
            return QString::fromStdString(e.get<std::string>());
        if (e.is_object() && e.contains("message") && e["message"].is_string())
            return QString::fromStdString(e["message"].get<std::string>());
    }
    return QString::fromUtf8(body.left(200)).simplified();
}

void SseReader::feed(const QByteArray &piece, TimePoint at)
{
    m_buffer += piece;
    // Events end with a blank line; lines end with \n, \r\n or \r.
    for (;;) {
        qsizetype end = -1, skip = 0;
        for (const char *sep : {"\r\n\r\n", "\n\n", "\r\r"}) {
            const qsizetype i = m_buffer.indexOf(sep);
            if (i >= 0 && (end < 0 || i < end)) {
                end = i;
                skip = qsizetype(qstrlen(sep));
            }
        }
        if (end < 0)
            return;
        const QByteArray block = m_buffer.left(end);
        m_buffer.remove(0, end + skip);
        QByteArray data;
        for (QByteArray line : block.split('\n')) {
            if (line.endsWith('\r'))
                line.chop(1);
            if (line.startsWith("data:")) {
                QByteArray v = line.mid(5);
                if (v.startsWith(' '))
                    v.remove(0, 1);
                if (!data.isEmpty())
                    data += '\n';
                data += v;
            }
        }
        if (!data.isEmpty())
            event(data, at);
    }
}

void SseReader::event(const QByteArray &data, TimePoint at)
{
    if (data == "[DONE]") {
        m_done = true;
        return;
    }
    auto j = nlohmann::json::parse(data.begin(), data.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        m_error = QStringLiteral("unreadable event: %1").arg(QString::fromUtf8(data.left(120)));
        return;
    }
    if (j.contains("error")) {
        m_error = errorText(data);
        return;
    }
    if (j.contains("usage") && j["usage"].is_object() && j["usage"].contains("completion_tokens") &&
        j["usage"]["completion_tokens"].is_number_integer())
        m_usageTokens = j["usage"]["completion_tokens"].get<int>();
    if (!j.contains("choices") || !j["choices"].is_array())
        return;
    bool text = false;
    // A token event: text in it, or (a token that decodes to no text, e.g.
    // half of a UTF-8 sequence) a text field while the choice is not yet
    // finished. vLLM's closing chunk has empty text and a finish_reason:
    // not a token. Chat chunks carry the text in delta.content; the chunk
    // that opens a choice ({"role": "assistant", "content": ""}) is not a
    // token unless it brings text.
    for (const auto &c : j["choices"]) {
        if (!c.is_object())
            continue;
        const bool finished = c.contains("finish_reason") && !c["finish_reason"].is_null();
        if (c.contains("text") && c["text"].is_string()) {
            if (!c["text"].get<std::string>().empty() || !finished)
                text = true;
        } else if (c.contains("delta") && c["delta"].is_object()) {
            const auto &delta = c["delta"];
            if (!delta.contains("content") || !delta["content"].is_string())
                continue;
            const bool opening = delta.contains("role");
            if (!delta["content"].get<std::string>().empty() || (!finished && !opening))
                text = true;
        }
    }
    if (!text)
        return;
    ++m_tokenEvents;
    const auto timings = j.find("timings");
    if (timings != j.end() && timings->is_object() && timings->contains("predicted_n") &&
        (*timings)["predicted_n"].is_number_integer())
        m_counts.push_back((*timings)["predicted_n"].get<int>());
    else
        m_countsKnown = false;
    if (!m_first)
        m_first = at;
    else
        m_gaps.push_back(at - *m_last);
    m_last = at;
}

} // namespace bp::remote
