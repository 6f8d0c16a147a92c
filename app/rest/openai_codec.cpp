#include "openai_codec.h"

#include "oip_codec.h"
#include "v1_codec.h"

#include "engine/tokenizer.h"

#include <algorithm>

namespace bp::rest {

using nlohmann::json;

namespace {
Status invalid(std::string message)
{
    return {StatusCode::InvalidArgument, std::move(message)};
}

constexpr int kDefaultMaxTokens = 16; // OpenAI's default

// UTF-8 sequence length announced by a lead byte (1 for ASCII, a stray
// continuation byte or an invalid lead: those stand alone).
std::size_t sequenceLength(TokenId byte)
{
    if ((byte & 0xE0) == 0xC0)
        return 2;
    if ((byte & 0xF0) == 0xE0)
        return 3;
    if ((byte & 0xF8) == 0xF0)
        return 4;
    return 1;
}

bool isContinuation(TokenId byte)
{
    return (byte & 0xC0) == 0x80;
}
} // namespace

Result<CompletionRequest> parseCompletionRequest(std::string_view body, const ModelInfo &model)
{
    auto parsed = parseJsonObject(body);
    if (!parsed)
        return parsed.status();
    const json &j = *parsed;
    CompletionRequest out;
    bool havePrompt = false;
    long long maxTokens = kDefaultMaxTokens;
    for (const auto &[key, value] : j.items()) {
        if (key == "prompt") {
            if (value.is_string()) {
                out.request.tokens = ByteTokenizer::encode(value.get_ref<const std::string &>());
            } else if (value.is_array()) {
                out.request.tokens.reserve(value.size());
                for (std::size_t i = 0; i < value.size(); ++i) {
                    const json &t = value[i];
                    if (!t.is_number_integer())
                        return invalid("prompt[" + std::to_string(i) +
                                       "] must be a token id (an integer), got " + t.type_name() +
                                       " (one prompt per request: a string or an array of token ids)");
                    const long long id = t.get<long long>();
                    if (id < 0 || id >= model.vocabSize)
                        return Status(StatusCode::OutOfRange, "prompt[" + std::to_string(i) +
                                                                  "] = " + std::to_string(id) +
                                                                  " is outside the vocabulary [0, " +
                                                                  std::to_string(model.vocabSize) + ")");
                    out.request.tokens.push_back(TokenId(id));
                }
            } else {
                return invalid(std::string("field 'prompt' must be a string or an array of token ids, got ") +
                               value.type_name());
            }
            if (out.request.tokens.empty())
                return invalid("field 'prompt' is empty: give at least one token");
            havePrompt = true;
        } else if (key == "max_tokens") {
            if (value.is_null())
                continue; // OpenAI clients send null for "the default"
            if (!value.is_number_integer())
                return invalid(std::string("field 'max_tokens' must be an integer, got ") +
                               value.type_name());
            maxTokens = value.get<long long>();
        } else if (key == "stream") {
            if (!value.is_boolean())
                return invalid(std::string("field 'stream' must be true or false, got ") + value.type_name());
            out.stream = value.get<bool>();
        } else if (key == "model") {
            if (!value.is_string())
                return invalid(std::string("field 'model' must be a string, got ") + value.type_name());
            const std::string &name = value.get_ref<const std::string &>();
            if (!matchesModel(name, model))
                return Status(StatusCode::NotFound, "unknown model '" + name + "' (this server serves '" +
                                                        servedModelName(model) + "')");
        } else if (key == "n" || key == "best_of") {
            if (!value.is_null() && !(value.is_number_integer() && value.get<long long>() == 1))
                return invalid("field '" + key + "' must be 1: one completion per request");
        } else if (key == "echo") {
            if (!value.is_null() && !(value.is_boolean() && !value.get<bool>()))
                return invalid("field 'echo' must be false: the prompt is not repeated");
        } else if (key == "logprobs") {
            if (!value.is_null())
                return invalid("field 'logprobs' is not supported (must be null)");
        } else if (key == "temperature" || key == "top_p" || key == "seed" || key == "user" ||
                   key == "stream_options" || key == "ignore_eos" || key == "stop" ||
                   key == "presence_penalty" || key == "frequency_penalty") {
            // Accepted for compatibility; decoding is greedy.
        } else {
            return invalid("unknown field '" + key + "' (prompt, max_tokens, stream, model)");
        }
    }
    if (!havePrompt)
        return invalid("field 'prompt' is required (a string or an array of token ids)");
    if (!model.generative)
        return invalid("model " + model.name +
                       " does not generate tokens: /v1/completions needs a generative model");
    if (maxTokens < 1)
        return Status(StatusCode::OutOfRange, "max_tokens " + std::to_string(maxTokens) +
                                                  " is below 1: a completion has at least one token");
    if (Status s = checkMaxNewTokens(maxTokens, model); !s)
        return Status(s.code(), "max_tokens " + std::to_string(maxTokens) +
                                    " is above the model's limit of " +
                                    std::to_string(model.maxNewTokensLimit));
    out.request.maxNewTokens = int(maxTokens);
    out.promptTokens = out.request.tokens.size();
    return out;
}

std::string finishReason(std::size_t generated, int maxTokens)
{
    return generated >= std::size_t(std::max(0, maxTokens)) ? "length" : "stop";
}

json completionUsage(std::size_t promptTokens, std::size_t completionTokens)
{
    return json{{"prompt_tokens", promptTokens},
                {"completion_tokens", completionTokens},
                {"total_tokens", promptTokens + completionTokens}};
}

json completionObject(const std::string &id, std::int64_t created, const std::string &model,
                      const std::string &text, const std::string &finishReason, std::size_t promptTokens,
                      std::size_t completionTokens)
{
    return json{{"id", id},
                {"object", "text_completion"},
                {"created", created},
                {"model", model},
                {"choices",
                 json::array({json{
                     {"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finishReason}}})},
                {"usage", completionUsage(promptTokens, completionTokens)}};
}

json completionChunk(const std::string &id, std::int64_t created, const std::string &model,
                     const std::string &text, const std::string &finishReason)
{
    return json{
        {"id", id},
        {"object", "text_completion"},
        {"created", created},
        {"model", model},
        {"choices",
         json::array({json{{"text", text},
                           {"index", 0},
                           {"logprobs", nullptr},
                           {"finish_reason", finishReason.empty() ? json(nullptr) : json(finishReason)}}})}};
}

std::string sseEvent(const json &data)
{
    return "data: " + data.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

std::string sseDone()
{
    return "data: [DONE]\n\n";
}

std::string TokenTextStream::push(TokenId token)
{
    if (token < 0 || token > 255) { // no bytes: ends whatever was held
        std::string out = ByteTokenizer::decode(m_held);
        m_held.clear();
        const TokenId one[] = {token};
        return out + ByteTokenizer::decode(one);
    }
    m_held.push_back(token);
    // Where the last UTF-8 sequence starts (a lead byte within the last four).
    std::size_t start = m_held.size();
    for (std::size_t back = 1; back <= std::min<std::size_t>(4, m_held.size()); ++back) {
        if (!isContinuation(m_held[m_held.size() - back])) {
            start = m_held.size() - back;
            break;
        }
    }
    std::size_t cut = m_held.size(); // emit everything before `cut`
    if (start < m_held.size() && m_held.size() - start < sequenceLength(m_held[start]))
        cut = start; // that character is still incomplete: hold it
    std::string out = ByteTokenizer::decode(std::span<const TokenId>(m_held.data(), cut));
    m_held.erase(m_held.begin(), m_held.begin() + std::ptrdiff_t(cut));
    return out;
}

std::string TokenTextStream::finish()
{
    std::string out = ByteTokenizer::decode(m_held);
    m_held.clear();
    return out;
}

} // namespace bp::rest
