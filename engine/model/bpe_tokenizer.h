// A Hugging Face tokenizer.json of the byte-level BPE kind (GPT-2, Llama 3,
// Qwen 2, Mistral's newer tokenizers): what `--model hf:PATH` encodes text
// and decodes answers with. Torch-free; PCRE2 runs the pre-tokenizer's split
// pattern (\p{L}-style classes and lookahead, which std::regex lacks) and
// utf8proc the NFC normalizer.
//
// What it follows, in Hugging Face's order:
//   added tokens   matched first in the raw text (longest at each place;
//                  lstrip / rstrip eat the whitespace beside them), each its
//                  own id; special ones are dropped by decode(skipSpecial)
//   normalizer     none, NFC, or a Sequence of those
//   pre-tokenizer  ByteLevel (with or without GPT-2's split pattern),
//                  Split (a Regex or String pattern, behavior Isolated or
//                  Removed, invert false), or a Sequence of those
//   model          BPE over the byte-level alphabet: merges by rank;
//                  ignore_merges (Llama 3) takes a whole word found in the
//                  vocabulary as it is
//   post-processor TemplateProcessing's single template (Llama 3's
//                  <|begin_of_text|> $A), ByteLevel, or a Sequence
//   decoder        ByteLevel
// Anything else (SentencePiece-style Metaspace and byte_fallback, WordPiece,
// Unigram, other normalizers) is refused by load() naming the part.
//
// Chat prompts: the folder's chat template (chat_template.jinja or
// tokenizer_config.json's chat_template) rendered by a Jinja engine as
// transformers' apply_chat_template renders it (engine/model/chat_template.h),
// with the generation prompt on. The prompt holds the template's own special
// tokens, so it is encoded without adding more (as transformers does).
// Without a template, or with one that does not parse, chatPrompt() is
// InvalidArgument saying so.
#pragma once

#include "engine/core/tokenizer.h"
#include "engine/model/chat_template.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace bp {

class BpeTokenizer final : public TextTokenizer {
public:
    // tokenizer.json, and tokenizer_config.json beside it when present (the
    // chat template). NotFound / InvalidArgument naming the file and the part.
    static Result<std::shared_ptr<BpeTokenizer>> load(const std::string &tokenizerJson);
    ~BpeTokenizer() override;

    std::string describe() const override;
    std::vector<TokenId> encode(std::string_view text, bool addSpecial = true) const override;
    std::string tokenBytes(TokenId id, bool skipSpecial = true) const override;
    Result<std::string> chatPrompt(const std::vector<ChatMessage> &messages) const override;
    bool chatPromptHasSpecials() const override { return m_chat != nullptr; }

    int vocabSize() const { return m_vocabSize; } // the largest id + 1
    // The chat template, or null when the folder has none that parses.
    const ChatTemplate *chatTemplate() const { return m_chat.get(); }
    std::optional<TokenId> idOf(const std::string &token) const;

private:
    struct Impl;
    explicit BpeTokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m;
    int m_vocabSize = 0;
    std::shared_ptr<const ChatTemplate> m_chat;
};

} // namespace bp
