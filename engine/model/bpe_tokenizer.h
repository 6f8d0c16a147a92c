// A Hugging Face tokenizer.json of the BPE kind: what `--model hf:PATH`
// encodes text and decodes answers with. Two families:
//   byte-level     GPT-2, Llama 3, Qwen 2/3, Mistral's newer tokenizers: a
//                  ByteLevel pre-tokenizer or decoder, every byte a character
//                  of GPT-2's alphabet
//   SentencePiece  Llama 2, Mistral 7B v0.1-v0.3, Gemma: pieces over
//   style          characters with "▁" for spaces (Prepend / Replace
//                  normalizers or a Metaspace pre-tokenizer), byte_fallback
//                  (<0xNN> tokens for characters outside the vocabulary),
//                  fuse_unk, and a Replace / ByteFallback / Fuse / Strip or
//                  Metaspace decoder
// Torch-free; the normalizer and pre-tokenizer are
// engine/model/tokenizer_text_stages.h (PCRE2, utf8proc).
//
// What it follows, in Hugging Face's order:
//   added tokens   matched first in the raw text (longest at each place;
//                  lstrip / rstrip eat the whitespace beside them), each its
//                  own id; special ones are dropped by decode(skipSpecial)
//   normalizer,    per stretch of text between added tokens
//   pre-tokenizer  (tokenizer_text_stages.h)
//   model          BPE: merges by rank; ignore_merges (Llama 3) takes a
//                  whole word found in the vocabulary as it is
//   post-processor TemplateProcessing's single template (Llama 3's
//                  <|begin_of_text|> $A, Llama 2's <s> $A), ByteLevel, or a
//                  Sequence
// Anything else (WordPiece and Unigram models, a subword prefix, other
// normalizers, pre-tokenizers or decoders) is refused by load() naming the
// part.
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

    // decode() as transformers' tokenizer.decode() gives it: the decoder's
    // Strip / Metaspace drops the first token's leading space (Llama 2's
    // "▁Hello" decodes to "Hello"). decode() and tokenBytes() keep it, as an
    // answer that continues a prompt needs (what vLLM's incremental
    // detokenising gives).
    std::string decodeAsTransformers(std::span<const TokenId> ids, bool skipSpecial = true) const;

    int vocabSize() const { return m_vocabSize; } // the largest id + 1
    // The chat template, or null when the folder has none that parses.
    const ChatTemplate *chatTemplate() const { return m_chat.get(); }
    std::optional<TokenId> idOf(const std::string &token) const;

    struct Impl; // bpe_tokenizer.cpp's; named here so its file-local helpers can fill it

private:
    explicit BpeTokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m;
    int m_vocabSize = 0;
    std::shared_ptr<const ChatTemplate> m_chat;
};

} // namespace bp
