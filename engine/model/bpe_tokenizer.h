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
// Chat prompts: tokenizer_config.json's chat_template, when it is one of the
// two families rendered here: Llama 3 (<|start_header_id|>role<|end_header_id|>
// \n\n content <|eot_id|>, after <|begin_of_text|>) and ChatML (Qwen 2:
// <|im_start|>role\n content <|im_end|>\n). The messages are rendered as
// given: a template's default system prompt (Qwen 2's "You are a helpful
// assistant.", Llama 3.1's date preamble) is not added. Any other template
// makes chatPrompt() InvalidArgument, saying so.
#pragma once

#include "engine/core/tokenizer.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace bp {

class BpeTokenizer final : public TextTokenizer {
public:
    enum class ChatFamily { None, Llama3, ChatMl };

    // tokenizer.json, and tokenizer_config.json beside it when present (the
    // chat template). NotFound / InvalidArgument naming the file and the part.
    static Result<std::shared_ptr<BpeTokenizer>> load(const std::string &tokenizerJson);
    ~BpeTokenizer() override;

    std::string describe() const override;
    std::vector<TokenId> encode(std::string_view text, bool addSpecial = true) const override;
    std::string tokenBytes(TokenId id, bool skipSpecial = true) const override;
    Result<std::string> chatPrompt(const std::vector<ChatMessage> &messages) const override;
    bool chatPromptHasSpecials() const override { return m_chat != ChatFamily::None; }

    int vocabSize() const { return m_vocabSize; } // the largest id + 1
    ChatFamily chatFamily() const { return m_chat; }
    std::optional<TokenId> idOf(const std::string &token) const;

private:
    struct Impl;
    explicit BpeTokenizer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> m;
    int m_vocabSize = 0;
    ChatFamily m_chat = ChatFamily::None;
};

} // namespace bp
