// OpenAI-compatible `POST /v1/completions` (docs/rest.md): the request, the
// completion object, and the server-sent-event chunks of a stream. The
// common LLM benchmark clients (vLLM's benchmark_serving, genai-perf, the
// openai package) speak this, so the endpoint is a target for them.
//
// Greedy decoding only: sampling fields those clients send (temperature,
// top_p, seed, ...) are accepted and do not change the output; n and
// best_of must be 1, echo false and logprobs null. Any other field is an
// error naming it, as on the other routes.
#pragma once

#include "engine/backend.h"
#include "engine/request.h"
#include "engine/result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace bp::rest {

struct CompletionRequest {
    Request request; // tokens = the prompt; maxNewTokens = max_tokens
    bool stream = false;
    std::size_t promptTokens = 0;
};

// `prompt`: a string (tokenized with the engine's ByteTokenizer) or an array
// of token ids; `max_tokens` in [1, the model's limit] (default 16, as
// OpenAI's); `stream`; `model` (when given, must name the served model).
// InvalidArgument / OutOfRange with a message naming the field; NotFound for
// another model.
Result<CompletionRequest> parseCompletionRequest(std::string_view body, const ModelInfo &model);

// "length" when the model generated max_tokens tokens, else "stop".
std::string finishReason(std::size_t generated, int maxTokens);

nlohmann::json completionUsage(std::size_t promptTokens, std::size_t completionTokens);

// The whole answer (`stream` false): an OpenAI completion object.
nlohmann::json completionObject(const std::string &id, std::int64_t created, const std::string &model,
                                const std::string &text, const std::string &finishReason,
                                std::size_t promptTokens, std::size_t completionTokens);

// One stream chunk: text delta, finish_reason null until the last one; the
// last one also carries `usage`.
nlohmann::json completionChunk(const std::string &id, std::int64_t created, const std::string &model,
                               const std::string &text, const std::string &finishReason = {});

// "data: <json>\n\n"
std::string sseEvent(const nlohmann::json &data);
// "data: [DONE]\n\n"
std::string sseDone();

// Turns generated token ids into text one token at a time, holding back the
// bytes of a UTF-8 character that is not complete yet, so every delta is
// valid UTF-8 and the deltas add up to ByteTokenizer::decode(all tokens).
class TokenTextStream {
public:
    // The text this token completes ("" while a character is incomplete).
    std::string push(TokenId token);
    // What is still held back, repaired (at the end of the generation).
    std::string finish();

private:
    std::vector<TokenId> m_held;
};

} // namespace bp::rest
