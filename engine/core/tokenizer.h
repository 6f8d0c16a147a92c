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

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bp {

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
};

} // namespace bp
