// `POST /v1/chat/completions` (docs/rest.md, "OpenAI"): the messages of a
// conversation become one prompt through BatchPilot's chat template, and
// the answer is one assistant message.
//
// The chat template (the engine's tokenizer is byte-level: one token per
// UTF-8 byte, engine/core/tokenizer.h), for each message in order
//     <|ROLE|>\n CONTENT \n
// then the assistant's header, where generation starts:
//     <|assistant|>\n
// CONTENT is the message's string, or its text parts joined with "\n".
// Example: [{"role": "user", "content": "Hi"}] becomes
// "<|user|>\nHi\n<|assistant|>\n" (21 tokens).
//
// TorchScript models get the same bytes: BatchPilot has no model tokenizer,
// so a model trained on another vocabulary sees byte ids (the lengths, and
// so the batching, are right; the text is not meaningful). Such a model
// takes its own token ids through /v1/completions (`prompt` as ids).
#pragma once

#include "openai_codec.h"

namespace bp::rest {

// The template applied to messages given as (role, content) pairs.
std::string chatPrompt(const std::vector<std::pair<std::string, std::string>> &messages);

// `messages` (required: system, developer, user, assistant or tool
// messages; content a string, text parts or null), `max_completion_tokens`
// or `max_tokens` (the former wins; default: what is left of the model's
// sequence length after the prompt, at most the model's limit), `model`,
// `stream`, `stream_options`, the ignored sampling fields (openai_codec.h);
// `tools` empty or null, `tool_choice` none/auto/null, `response_format`
// text or null. One choice (`n` must be 1).
Result<OpenAiRequest> parseChatRequest(std::string_view body, const ModelInfo &model);

} // namespace bp::rest
