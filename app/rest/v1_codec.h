// The /v1/infer wire format (BatchPilot's own, one sequence per call).
//
// Request body (a JSON object; unknown fields are errors):
//   input_ids       array of integers in [0, vocab)   } exactly one of the two
//   text            string, byte-level tokens         }
//   max_new_tokens  integer >= 0 (generative models; default 0)
//   timeout_ms      number >= 0: fail with 504 if not started by then
//   priority        integer (higher first within a queue; default 0)
//
// Response: output (tokens, their text, values), timing in µs and the facts
// of the batch the request ran in; see docs/rest.md.
#pragma once

#include "engine/core/result.h"
#include "engine/model/backend.h"

#include <nlohmann/json.hpp>

#include <string_view>

namespace bp::rest {

// Errors are InvalidArgument/OutOfRange with a message naming the field.
// `now` is the engine clock's time, the base of timeout_ms.
Result<Request> parseV1Infer(std::string_view body, const ModelInfo &model, TimePoint now);

// `tokenizer` decodes the tokens into "text" (the model's; bytes by default).
nlohmann::json v1ResponseJson(const Response &response, const std::string &modelName,
                              const TextTokenizer &tokenizer = ByteTokenizer::instance());

// Timings go out in µs through bp::toMicros (engine/core/clock.h), the one
// conversion every writer (REST, replay, config JSON, bench) uses.
// max_new_tokens against what the model can do.
Status checkMaxNewTokens(long long value, const ModelInfo &model);
// A JSON body that must be an object; InvalidArgument otherwise.
Result<nlohmann::json> parseJsonObject(std::string_view body);

} // namespace bp::rest
