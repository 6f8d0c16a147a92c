// The OpenAI-compatible API's wire format (docs/rest.md, "OpenAI"): the
// request of `POST /v1/completions` (chat: openai_chat.h), the completion
// and chat objects, their server-sent-event chunks, the model list. The
// common LLM benchmark clients (vLLM's `bench serve`, genai-perf,
// guidellm, the official openai libraries) speak this, so the endpoint is a
// target for them.
//
// Greedy decoding only: the sampling fields those clients send
// (temperature, top_p, seed, stop, ignore_eos, ...) are accepted and do not
// change the output; n and best_of must be 1, echo false and logprobs
// null. Any other field is an error naming it, as on the other routes.
#pragma once

#include "engine/core/request.h"
#include "engine/core/result.h"
#include "engine/model/backend.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bp::rest {

enum class OpenAiEndpoint { Completions, Chat };

// A parsed request: one engine Request per choice.
struct OpenAiRequest {
    OpenAiEndpoint endpoint = OpenAiEndpoint::Completions;
    // Completions: one per prompt of the list (a single prompt gives one);
    // chat: the conversation through the chat template. Each carries the
    // prompt's tokens and maxNewTokens = max_tokens.
    std::vector<Request> prompts;
    int maxTokens = 16;
    bool stream = false;
    // stream_options.include_usage: a last chunk with empty choices and the
    // usage; every other chunk carries "usage": null.
    bool includeUsage = false;
    // stream_options.continuous_usage_stats (vLLM's): every chunk carries the
    // usage so far (with include_usage).
    bool continuousUsage = false;
    // The model's text codec (ModelInfo::tokenizer): prompts were encoded
    // with it, answers are decoded with it. Null: the byte tokenizer.
    std::shared_ptr<const TextTokenizer> tokenizer;
};

// At most this many prompts in one completions request.
inline constexpr std::size_t kMaxPrompts = 4096;

// `prompt`: a string (tokenized with the model's tokenizer), an array
// of token ids, an array of strings or an array of token-id arrays (one
// choice per prompt); `max_tokens` in [1, the model's limit] (default 16,
// as OpenAI's); `stream`, `stream_options`; `model` (when given, must name
// the served model). InvalidArgument / OutOfRange with a message naming the
// field; NotFound for another model.
Result<OpenAiRequest> parseCompletionRequest(std::string_view body, const ModelInfo &model);

// The fields both endpoints share, for the chat parser: `model`, `stream`,
// `stream_options`, the accepted-and-ignored sampling fields and the ones
// that must keep their default (n, best_of, echo, logprobs, ...).
// `handled` is false for a key that is none of these.
Status parseCommonField(const std::string &key, const nlohmann::json &value, const ModelInfo &model,
                        OpenAiRequest &out, bool &handled);
// `max_tokens` / `max_completion_tokens`: an integer or null (the default).
// OK and *maxTokens unchanged for null.
Status parseMaxTokens(const std::string &key, const nlohmann::json &value, long long &maxTokens);
// The model generates, max_tokens is within [1, the model's limit], at
// least one prompt, none empty, each within the vocabulary; sets every
// prompt's maxNewTokens. `name` is the field max_tokens came from.
Status finishRequest(OpenAiRequest &request, long long maxTokens, const ModelInfo &model,
                     const std::string &name);

// "length" when the model generated max_tokens tokens, else "stop".
std::string finishReason(std::size_t generated, int maxTokens);

nlohmann::json completionUsage(std::size_t promptTokens, std::size_t completionTokens);

// One choice of a whole answer.
struct OpenAiChoice {
    std::string text;
    std::string finishReason;
};

// The whole answer (`stream` false): an OpenAI completion ("text_completion")
// or chat completion ("chat.completion") object, choices indexed in order.
nlohmann::json completionObject(OpenAiEndpoint endpoint, const std::string &id, std::int64_t created,
                                const std::string &model, const std::vector<OpenAiChoice> &choices,
                                const nlohmann::json &usage);

// One stream chunk for choice `index`: completions carry `text`, chat a
// `delta` ({"role": "assistant"} first, then {"content": ...}, {} to end);
// finish_reason null until the choice's last chunk.
nlohmann::json completionChunk(const std::string &id, std::int64_t created, const std::string &model,
                               int index, const std::string &text, const std::string &finishReason = {});
nlohmann::json chatChunk(const std::string &id, std::int64_t created, const std::string &model, int index,
                         nlohmann::json delta, const std::string &finishReason = {});
// The include_usage chunk: empty choices, the usage.
nlohmann::json usageChunk(OpenAiEndpoint endpoint, const std::string &id, std::int64_t created,
                          const std::string &model, nlohmann::json usage);

// GET /v1/models: {"object": "list", "data": [modelObject]}.
nlohmann::json modelObject(const ModelInfo &model, std::int64_t created);
nlohmann::json modelList(const ModelInfo &model, std::int64_t created);

// "data: <json>\n\n"
std::string sseEvent(const nlohmann::json &data);
// "data: [DONE]\n\n"
std::string sseDone();

// Turns generated token ids into text one token at a time (the model's
// tokenizer; special tokens give no text), holding back the bytes of a UTF-8
// character that is not complete yet, so every delta is valid UTF-8 and the
// deltas add up to the tokenizer's decode(all tokens).
class TokenTextStream {
public:
    explicit TokenTextStream(const TextTokenizer &tokenizer = ByteTokenizer::instance())
        : m_tokenizer(&tokenizer)
    {
    }
    // The text this token completes ("" while a character is incomplete).
    std::string push(TokenId token);
    // What is still held back, repaired (at the end of the generation).
    std::string finish();

private:
    const TextTokenizer *m_tokenizer;
    std::string m_held;
};

} // namespace bp::rest
