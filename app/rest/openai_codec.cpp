#include "openai_codec.h"

#include "oip_codec.h"
#include "v1_codec.h"

#include "engine/core/tokenizer.h"

#include <algorithm>
#include <limits>

namespace bp::rest {

using nlohmann::json;

namespace {
Status invalid(std::string message)
{
    return {StatusCode::InvalidArgument, std::move(message)};
}

constexpr int kDefaultMaxTokens = 16; // OpenAI's default for completions

// Fields accepted for compatibility that do not change greedy decoding (or
// that name tokenizer details a byte tokenizer does not have).
bool isIgnoredField(const std::string &key)
{
    static const char *const ignored[] = {"temperature",
                                          "top_p",
                                          "top_k",
                                          "min_p",
                                          "seed",
                                          "user",
                                          "stop",
                                          "stop_token_ids",
                                          "ignore_eos",
                                          "min_tokens",
                                          "presence_penalty",
                                          "frequency_penalty",
                                          "repetition_penalty",
                                          "length_penalty",
                                          "logit_bias",
                                          "skip_special_tokens",
                                          "spaces_between_special_tokens",
                                          "include_stop_str_in_output",
                                          "metadata",
                                          "store",
                                          "service_tier",
                                          "parallel_tool_calls",
                                          "request_id",
                                          "priority"};
    return std::any_of(std::begin(ignored), std::end(ignored), [&](const char *k) { return key == k; });
}

// Token ids of prompt `where` (an array of integers).
Result<std::vector<TokenId>> tokenIds(const json &value, const std::string &where)
{
    std::vector<TokenId> out;
    out.reserve(value.size());
    for (std::size_t i = 0; i < value.size(); ++i) {
        const json &t = value[i];
        if (!t.is_number_integer())
            return invalid(where + "[" + std::to_string(i) + "] must be a token id (an integer), got " +
                           t.type_name());
        const long long id = t.get<long long>();
        if (id < 0 || id > std::numeric_limits<TokenId>::max())
            return Status(StatusCode::OutOfRange, where + "[" + std::to_string(i) +
                                                      "] = " + std::to_string(id) + " is not a token id");
        out.push_back(TokenId(id));
    }
    return out;
}

// `prompt`: a string (the model's tokenizer, its own special tokens added
// as Hugging Face's tokenizer(text) adds them), token ids, or a list of
// either (one choice each).
Status parsePrompt(const json &value, const TextTokenizer &tokenizer, OpenAiRequest &out)
{
    auto add = [&out](std::vector<TokenId> tokens) {
        Request r;
        r.tokens = std::move(tokens);
        out.prompts.push_back(std::move(r));
    };
    if (value.is_string()) {
        add(tokenizer.encode(value.get_ref<const std::string &>()));
        return Status::ok();
    }
    if (!value.is_array())
        return invalid(
            std::string("field 'prompt' must be a string, an array of token ids, an array of strings "
                        "or an array of token-id arrays, got ") +
            value.type_name());
    if (value.empty())
        return invalid("field 'prompt' is an empty list: give at least one prompt");
    const json &first = value.front();
    if (first.is_number()) { // one prompt as token ids
        auto ids = tokenIds(value, "prompt");
        if (!ids)
            return ids.status();
        add(std::move(*ids));
        return Status::ok();
    }
    if (!first.is_string() && !first.is_array())
        return invalid(std::string("prompt[0] must be a token id, a string or an array of token ids, got ") +
                       first.type_name());
    if (value.size() > kMaxPrompts)
        return invalid("field 'prompt' lists " + std::to_string(value.size()) + " prompts; at most " +
                       std::to_string(kMaxPrompts) + " in one request");
    for (std::size_t i = 0; i < value.size(); ++i) {
        const json &p = value[i];
        const std::string where = "prompt[" + std::to_string(i) + "]";
        if (first.is_string()) {
            if (!p.is_string())
                return invalid(where + " must be a string like prompt[0], got " + p.type_name());
            add(tokenizer.encode(p.get_ref<const std::string &>()));
        } else {
            if (!p.is_array())
                return invalid(where + " must be an array of token ids like prompt[0], got " + p.type_name());
            auto ids = tokenIds(p, where);
            if (!ids)
                return ids.status();
            add(std::move(*ids));
        }
    }
    return Status::ok();
}
} // namespace

Status parseMaxTokens(const std::string &key, const json &value, long long &maxTokens)
{
    if (value.is_null())
        return Status::ok(); // OpenAI clients send null for "the default"
    if (!value.is_number_integer())
        return invalid("field '" + key + "' must be an integer, got " + value.type_name());
    maxTokens = value.get<long long>();
    return Status::ok();
}

Status parseCommonField(const std::string &key, const json &value, const ModelInfo &model, OpenAiRequest &out,
                        bool &handled)
{
    handled = true;
    if (key == "model") {
        if (!value.is_string())
            return invalid(std::string("field 'model' must be a string, got ") + value.type_name());
        const std::string &name = value.get_ref<const std::string &>();
        if (!matchesModel(name, model))
            return Status(StatusCode::NotFound, "unknown model '" + name + "' (this server serves '" +
                                                    servedModelName(model) + "')");
    } else if (key == "stream") {
        if (!value.is_null() && !value.is_boolean())
            return invalid(std::string("field 'stream' must be true or false, got ") + value.type_name());
        out.stream = value.is_boolean() && value.get<bool>();
    } else if (key == "stream_options") {
        if (value.is_null())
            return Status::ok();
        if (!value.is_object())
            return invalid(std::string("field 'stream_options' must be an object, got ") + value.type_name());
        for (const auto &[option, v] : value.items()) {
            if (option != "include_usage" && option != "continuous_usage_stats")
                continue; // other stream options (e.g. include_obfuscation) do not apply
            if (!v.is_null() && !v.is_boolean())
                return invalid("field 'stream_options' has " + option + " = " + v.dump() +
                               ": must be true or false");
            (option == "include_usage" ? out.includeUsage : out.continuousUsage) =
                v.is_boolean() && v.get<bool>();
        }
    } else if (key == "n" || key == "best_of") {
        if (!value.is_null() && !(value.is_number_integer() && value.get<long long>() == 1))
            return invalid("field '" + key + "' must be 1: one completion per prompt (decoding is greedy)");
    } else if (key == "echo") {
        if (!value.is_null() && !(value.is_boolean() && !value.get<bool>()))
            return invalid("field 'echo' must be false: the prompt is not repeated");
    } else if (key == "logprobs" || key == "top_logprobs") {
        const bool off = value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
                         (key == "top_logprobs" && value.is_number_integer() && value.get<long long>() == 0);
        if (!off)
            return invalid("field '" + key + "' is not supported (must be null)");
    } else if (key == "suffix") {
        if (!value.is_null())
            return invalid("field 'suffix' is not supported (must be null)");
    } else {
        handled = isIgnoredField(key); // accepted for compatibility; decoding is greedy
    }
    return Status::ok();
}

Status finishRequest(OpenAiRequest &request, long long maxTokens, const ModelInfo &model,
                     const std::string &name)
{
    const char *route = request.endpoint == OpenAiEndpoint::Chat ? "/v1/chat/completions" : "/v1/completions";
    if (!model.generative)
        return invalid("model " + model.name + " does not generate tokens: " + route +
                       " needs a generative model");
    if (maxTokens < 1)
        return Status(StatusCode::OutOfRange, name + " " + std::to_string(maxTokens) +
                                                  " is below 1: a completion has at least one token");
    if (Status s = checkMaxNewTokens(maxTokens, model); !s)
        return Status(s.code(), name + " " + std::to_string(maxTokens) + " is above the model's limit of " +
                                    std::to_string(model.maxNewTokensLimit));
    for (std::size_t i = 0; i < request.prompts.size(); ++i) {
        Request &r = request.prompts[i];
        const std::string where = request.prompts.size() > 1 ? "prompt[" + std::to_string(i) + "]" : "prompt";
        if (r.tokens.empty())
            return invalid((request.prompts.size() > 1 ? where : "field 'prompt'") +
                           " is empty: give at least one token");
        for (std::size_t t = 0; t < r.tokens.size(); ++t)
            if (r.tokens[t] < 0 || r.tokens[t] >= model.vocabSize)
                return Status(StatusCode::OutOfRange,
                              where + "[" + std::to_string(t) + "] = " + std::to_string(r.tokens[t]) +
                                  " is outside the vocabulary [0, " + std::to_string(model.vocabSize) + ")");
        r.maxNewTokens = int(maxTokens);
    }
    request.maxTokens = int(maxTokens);
    request.tokenizer = model.tokenizer;
    return Status::ok();
}

Result<OpenAiRequest> parseCompletionRequest(std::string_view body, const ModelInfo &model)
{
    auto parsed = parseJsonObject(body);
    if (!parsed)
        return parsed.status();
    OpenAiRequest out;
    bool havePrompt = false;
    long long maxTokens = kDefaultMaxTokens;
    for (const auto &[key, value] : parsed->items()) {
        if (key == "prompt") {
            if (Status s = parsePrompt(value, tokenizerOf(model), out); !s)
                return s;
            havePrompt = true;
        } else if (key == "max_tokens") {
            if (Status s = parseMaxTokens(key, value, maxTokens); !s)
                return s;
        } else {
            bool handled = false;
            if (Status s = parseCommonField(key, value, model, out, handled); !s)
                return s;
            if (!handled)
                return invalid("unknown field '" + key +
                               "' (prompt, max_tokens, stream, model; docs/rest.md lists "
                               "the fields accepted and ignored)");
        }
    }
    if (!havePrompt)
        return invalid("field 'prompt' is required (a string, an array of token ids, or a list of either)");
    if (Status s = finishRequest(out, maxTokens, model, "max_tokens"); !s)
        return s;
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

json completionObject(OpenAiEndpoint endpoint, const std::string &id, std::int64_t created,
                      const std::string &model, const std::vector<OpenAiChoice> &choices, const json &usage)
{
    const bool chat = endpoint == OpenAiEndpoint::Chat;
    json list = json::array();
    for (std::size_t i = 0; i < choices.size(); ++i) {
        json c{{"index", i}, {"logprobs", nullptr}, {"finish_reason", choices[i].finishReason}};
        if (chat)
            c["message"] = json{{"role", "assistant"}, {"content", choices[i].text}};
        else
            c["text"] = choices[i].text;
        list.push_back(std::move(c));
    }
    return json{{"id", id},
                {"object", chat ? "chat.completion" : "text_completion"},
                {"created", created},
                {"model", model},
                {"choices", std::move(list)},
                {"usage", usage}};
}

json completionChunk(const std::string &id, std::int64_t created, const std::string &model, int index,
                     const std::string &text, const std::string &finishReason)
{
    return json{
        {"id", id},
        {"object", "text_completion"},
        {"created", created},
        {"model", model},
        {"choices",
         json::array({json{{"text", text},
                           {"index", index},
                           {"logprobs", nullptr},
                           {"finish_reason", finishReason.empty() ? json(nullptr) : json(finishReason)}}})}};
}

json chatChunk(const std::string &id, std::int64_t created, const std::string &model, int index, json delta,
               const std::string &finishReason)
{
    return json{
        {"id", id},
        {"object", "chat.completion.chunk"},
        {"created", created},
        {"model", model},
        {"choices",
         json::array({json{{"index", index},
                           {"delta", std::move(delta)},
                           {"logprobs", nullptr},
                           {"finish_reason", finishReason.empty() ? json(nullptr) : json(finishReason)}}})}};
}

json usageChunk(OpenAiEndpoint endpoint, const std::string &id, std::int64_t created,
                const std::string &model, json usage)
{
    return json{{"id", id},
                {"object", endpoint == OpenAiEndpoint::Chat ? "chat.completion.chunk" : "text_completion"},
                {"created", created},
                {"model", model},
                {"choices", json::array()},
                {"usage", std::move(usage)}};
}

json modelObject(const ModelInfo &model, std::int64_t created)
{
    return json{{"id", servedModelName(model)},
                {"object", "model"},
                {"created", created},
                {"owned_by", "batchpilot"},
                {"max_model_len", model.maxSequenceLength}};
}

json modelList(const ModelInfo &model, std::int64_t created)
{
    return json{{"object", "list"}, {"data", json::array({modelObject(model, created)})}};
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
    m_held += m_tokenizer->tokenBytes(token);
    // A character still incomplete at the end is held back; the rest is text.
    const std::size_t keep = incompleteUtf8Tail(m_held);
    std::string out = repairUtf8(std::string_view(m_held).substr(0, m_held.size() - keep));
    m_held.erase(0, m_held.size() - keep);
    return out;
}

std::string TokenTextStream::finish()
{
    std::string out = repairUtf8(m_held);
    m_held.clear();
    return out;
}

} // namespace bp::rest
