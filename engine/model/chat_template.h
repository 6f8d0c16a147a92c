// A Hugging Face chat template (tokenizer_config.json's "chat_template" or
// chat_template.jinja), rendered as transformers' apply_chat_template renders
// it. Torch-free and Qt-free: the Jinja engine is google/minja
// (third_party/minja, MIT), compiled into chat_template.cpp alone.
//
// What a template sees, as in transformers:
//   messages               [{"role": ..., "content": ...}, ...] in order
//   add_generation_prompt  whether to open the assistant's turn
//   bos_token, eos_token,  the tokenizer's special tokens by name (those
//   unk_token, pad_token   tokenizer_config.json names; absent ones undefined)
//   raise_exception(msg)   ends rendering with `msg`
//   strftime_now(fmt)      the local time (Llama 3.1's date line)
// with Jinja's trim_blocks and lstrip_blocks on, the trailing newline of the
// template dropped, and minja's filters and tests (tojson, trim, loop.first /
// loop.last, namespace(), ...). Neither `tools` nor `documents` is defined:
// the REST layer refuses tool requests before rendering.
//
// Thread-safety: immutable after parse(); render() may run on any thread at
// once (each call renders in a fresh context).
#pragma once

#include "engine/core/result.h"
#include "engine/core/tokenizer.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace bp {

class ChatTemplate {
public:
    // The template's source and the special tokens it may name
    // ({"bos_token": "<s>", ...}). InvalidArgument with minja's message
    // (and where in the source) when it does not parse.
    static Result<std::shared_ptr<const ChatTemplate>>
    parse(const std::string &source, std::map<std::string, std::string> specialTokens);
    // The template a Hugging Face folder ships: chat_template.jinja
    // (transformers 5), else tokenizer_config.json's "chat_template" (a
    // string, or the entry named "default" of a list), with the special
    // tokens tokenizer_config.json names. NotFound saying what is missing;
    // InvalidArgument when the template does not parse.
    static Result<std::shared_ptr<const ChatTemplate>> load(const std::string &folder);
    ~ChatTemplate();

    // The prompt for `messages`; with `addGenerationPrompt`, ending where the
    // assistant's answer starts. InvalidArgument with the engine's message
    // when rendering fails (raise_exception, a type error, an unknown filter).
    Result<std::string> render(const std::vector<ChatMessage> &messages,
                               bool addGenerationPrompt = true) const;

    const std::string &source() const { return m_source; }

private:
    struct Impl;
    ChatTemplate(std::string source, std::map<std::string, std::string> specials, std::unique_ptr<Impl> impl);
    std::string m_source;
    std::map<std::string, std::string> m_specials;
    std::unique_ptr<Impl> m;
};

} // namespace bp
