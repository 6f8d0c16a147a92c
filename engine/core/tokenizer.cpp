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

std::string ByteTokenizer::decode(std::span<const TokenId> tokens)
{
    // First the raw bytes (ids >= 256 marked by an invalid byte 0xFF, which
    // the UTF-8 pass below turns into U+FFFD), then a validating copy.
    std::string bytes;
    bytes.reserve(tokens.size());
    for (TokenId t : tokens)
        bytes.push_back(t >= 0 && t < kVocabSize ? static_cast<char>(t) : static_cast<char>(0xFF));
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

bool ByteTokenizer::isByteSequence(std::span<const TokenId> tokens)
{
    for (TokenId t : tokens)
        if (t < 0 || t >= kVocabSize)
            return false;
    return true;
}

} // namespace bp
