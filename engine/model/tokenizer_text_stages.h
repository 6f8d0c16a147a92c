// The stages of a Hugging Face tokenizer.json that run on text before its
// model: the normalizer and the pre-tokenizer (engine/model/bpe_tokenizer.h
// runs them on each stretch of text between added tokens). Torch-free; PCRE2
// runs split patterns (\p{L}-style classes, lookahead), utf8proc NFC.
//
//   normalizer     NFC; Prepend (a prefix on non-empty text: Llama 2's
//                  legacy "▁"); Replace with a String pattern (" " -> "▁");
//                  or a Sequence of those
//   pre-tokenizer  ByteLevel (with or without GPT-2's split pattern); Split
//                  (a Regex or String pattern, behavior Isolated or Removed);
//                  Metaspace (spaces become its replacement, prepended by
//                  prepend_scheme always / first / never, and split before
//                  each replacement when `split`); or a Sequence of those
// Anything else is refused by name.
#pragma once

#include "engine/core/result.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace bp::hf {

class Regex;

class TextStages {
public:
    TextStages();
    TextStages(TextStages &&) noexcept;
    TextStages &operator=(TextStages &&) noexcept;
    ~TextStages();

    // The tokenizer.json's "normalizer" and "pre_tokenizer" (either may be
    // null). InvalidArgument naming `file` and the part it does not follow.
    static Status parse(const nlohmann::json &normalizer, const nlohmann::json &preTokenizer,
                        const std::string &file, TextStages &out);

    std::string normalize(const std::string &text) const;
    // The pieces the model encodes one by one. `atStart`: the text begins the
    // input (Metaspace's prepend_scheme "first" prepends only there).
    std::vector<std::string> preTokenize(const std::string &text, bool atStart) const;
    // Whether a ByteLevel pre-tokenizer runs (its bytes-to-characters map).
    bool byteLevel() const;

    struct Norm;
    struct Pre;

private:
    static Status collectNorm(const nlohmann::json &j, const std::string &file, std::vector<Norm> &out);
    static Status collectPre(const nlohmann::json &j, const std::string &file, std::vector<Pre> &out);
    std::vector<Norm> m_norm;
    std::vector<Pre> m_pre;
};

} // namespace bp::hf
