// Byte-level tokenizer shared by the console, REST and the built-in models.
// Qt-free and torch-free.
//
// Every byte of the UTF-8 text is one token: ids 0..255 are the byte values,
// so any text round-trips exactly and no vocabulary file is needed. The
// built-in models' vocabulary starts with these 256 ids; a larger vocabulary
// (the gpt2 preset has GPT-2's 50,257 ids) can *generate* ids above 255,
// which have no text: decode() renders each one as U+FFFD so the output stays
// valid UTF-8 and the loss is visible. There are no special ids: padding is
// carried by the attention mask, never by a token (docs/models.md).
#pragma once

#include "request.h"
#include "result.h"

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bp {

// `bytes` as valid UTF-8: every byte sequence that is not valid UTF-8 (RFC
// 3629) becomes U+FFFD.
std::string repairUtf8(std::string_view bytes);
// How many bytes at the end of `bytes` are the start of a UTF-8 sequence that
// more bytes could still complete (0..3): what a streaming decoder holds back.
std::size_t incompleteUtf8Tail(std::string_view bytes);

struct ChatMessage {
    std::string role; // system, user, assistant, ...
    std::string content;
};

// A model's text codec: the byte tokenizer of the built-in models, or a
// Hugging Face tokenizer.json (engine/model/bpe_tokenizer.h). Immutable after
// construction; every member is safe to call from any thread.
class TextTokenizer {
public:
    virtual ~TextTokenizer() = default;
    // "bytes", "BPE from tokenizer.json (32,000 ids)"
    virtual std::string describe() const = 0;
    // `text` as token ids; with `addSpecial`, the tokenizer's own special
    // tokens around it (Llama-3's <|begin_of_text|>), as Hugging Face's
    // tokenizer(text) adds them.
    virtual std::vector<TokenId> encode(std::string_view text, bool addSpecial = true) const = 0;
    // The bytes a token stands for (special tokens: their text, or nothing
    // with `skipSpecial`). Unknown ids give U+FFFD. Concatenated and passed
    // to repairUtf8() they are decode(): a streaming client decodes token by
    // token this way, holding back an incomplete UTF-8 tail.
    virtual std::string tokenBytes(TokenId id, bool skipSpecial = true) const = 0;
    std::string decode(std::span<const TokenId> ids, bool skipSpecial = true) const;
    // The prompt a chat model expects for `messages`, ending where the
    // assistant's answer starts; InvalidArgument when the model has no chat
    // template this tokenizer renders.
    virtual Result<std::string> chatPrompt(const std::vector<ChatMessage> &messages) const = 0;
    // Whether the chat prompt already holds the special tokens encode() would
    // add (then encode it with addSpecial = false).
    virtual bool chatPromptHasSpecials() const { return false; }
};

class ByteTokenizer {
public:
    static constexpr int kVocabSize = 256;

    // One token per byte; an empty text gives no tokens.
    static std::vector<TokenId> encode(std::string_view text);
    // Bytes back to text. Ids outside 0..255 become U+FFFD (the replacement
    // character). Byte sequences that are not valid UTF-8 (a model can
    // generate any byte) are repaired the same way, so the result is always
    // valid UTF-8.
    static std::string decode(std::span<const TokenId> tokens);
    // True when every id is a byte (what encode() can produce).
    static bool isByteSequence(std::span<const TokenId> tokens);
    // The built-in models' TextTokenizer: these functions, and the chat
    // prompt as "role: content" lines ending in "assistant:".
    static const TextTokenizer &instance();
};

} // namespace bp
