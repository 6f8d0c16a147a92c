#include "tokenizer.h"

namespace bp {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD"; // U+FFFD

// Length of the valid UTF-8 sequence starting at bytes[i], or 0 when the
// bytes there do not form one (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
std::size_t validSequenceLength(const std::string &bytes, std::size_t i)
{
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
    const unsigned char c = b(i);
    if (c < 0x80)
        return 1;
    std::size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF; // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (i + n > bytes.size())
        return 0;
    if (b(i + 1) < lo || b(i + 1) > hi)
        return 0;
    for (std::size_t k = 2; k < n; ++k)
        if (b(i + k) < 0x80 || b(i + k) > 0xBF)
            return 0;
    return n;
}

} // namespace

std::vector<TokenId> ByteTokenizer::encode(std::string_view text)
{
    std::vector<TokenId> out;
    out.reserve(text.size());
    for (char c : text)
        out.push_back(TokenId(static_cast<unsigned char>(c)));
    return out;
}

std::string repairUtf8(std::string_view view)
{
    const std::string bytes(view);
    std::string out;
    out.reserve(bytes.size());
    for (std::size_t i = 0; i < bytes.size();) {
        const std::size_t n = validSequenceLength(bytes, i);
        if (n == 0) {
            out += kReplacement;
            ++i;
        } else {
            out.append(bytes, i, n);
            i += n;
        }
    }
    return out;
}

std::size_t incompleteUtf8Tail(std::string_view bytes)
{
    // A lead byte among the last three whose sequence runs past the end, with
    // only continuation bytes after it.
    for (std::size_t back = 1; back <= 3 && back <= bytes.size(); ++back) {
        const auto c = static_cast<unsigned char>(bytes[bytes.size() - back]);
        if (c < 0x80)
            return 0;
        if (c >= 0xC2 && c <= 0xF4) { // a lead byte
            const std::size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
            return need > back ? back : 0;
        }
        if (c >= 0xC0)
            return 0; // not a byte UTF-8 uses: nothing can complete it
    }
    return 0;
}

std::string ByteTokenizer::decode(std::span<const TokenId> tokens)
{
    // The raw bytes (ids >= 256 marked by an invalid byte 0xFF, which the
    // UTF-8 pass turns into U+FFFD), then a validating copy.
    std::string bytes;
    bytes.reserve(tokens.size());
    for (TokenId t : tokens)
        bytes.push_back(t >= 0 && t < kVocabSize ? static_cast<char>(t) : static_cast<char>(0xFF));
    return repairUtf8(bytes);
}

std::string TextTokenizer::decode(std::span<const TokenId> ids, bool skipSpecial) const
{
    std::string bytes;
    for (TokenId id : ids)
        bytes += tokenBytes(id, skipSpecial);
    return repairUtf8(bytes);
}

namespace {

class ByteTextTokenizer final : public TextTokenizer {
public:
    std::string describe() const override { return "bytes (256 ids, one per byte)"; }
    std::vector<TokenId> encode(std::string_view text, bool) const override
    {
        return ByteTokenizer::encode(text);
    }
    std::string tokenBytes(TokenId id, bool) const override
    {
        return id >= 0 && id < ByteTokenizer::kVocabSize ? std::string(1, static_cast<char>(id))
                                                         : std::string(1, static_cast<char>(0xFF));
    }
    Result<std::string> chatPrompt(const std::vector<ChatMessage> &messages) const override
    {
        // A plain layout (the built-ins' weights are random: no template was
        // trained into them).
        std::string out;
        for (const ChatMessage &m : messages)
            out += "<|" + m.role + "|>\n" + m.content + "\n";
        out += "<|assistant|>\n";
        return out;
    }
};

} // namespace

const TextTokenizer &ByteTokenizer::instance()
{
    static const ByteTextTokenizer tokenizer;
    return tokenizer;
}

bool ByteTokenizer::isByteSequence(std::span<const TokenId> tokens)
{
    for (TokenId t : tokens)
        if (t < 0 || t >= kVocabSize)
            return false;
    return true;
}

} // namespace bp
