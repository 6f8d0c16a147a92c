#include "bpe_model.h"

#include <cstdio>
#include <limits>

namespace bp::hf {

using json = nlohmann::json;

namespace {

Status refuse(const std::string &file, const std::string &what)
{
    return Status(StatusCode::InvalidArgument, file + ": " + what);
}

std::string utf8Of(std::uint32_t cp)
{
    std::string out;
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
    return out;
}

// The characters of a valid UTF-8 string, each as its bytes.
std::vector<std::string> characters(const std::string &s)
{
    std::vector<std::string> out;
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const std::size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

// One code point from a character's bytes.
std::uint32_t codePoint(const std::string &c)
{
    const auto b = [&](std::size_t i) { return std::uint32_t(static_cast<unsigned char>(c[i])); };
    if (c.size() == 1)
        return b(0);
    if (c.size() == 2)
        return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    if (c.size() == 3)
        return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

} // namespace

Status BpeModel::parse(const json &model, const std::string &file, BpeModel &out)
{
    if (model.value("type", std::string("BPE")) != "BPE")
        return refuse(file, "model type " + model.value("type", std::string()) +
                                " is not supported (BPE is; WordPiece and Unigram are not)");
    // GPT-2's byte-to-character table: printable bytes stand for themselves,
    // the rest for the code points from U+0100 on.
    {
        std::vector<int> bs;
        for (int b = '!'; b <= '~'; ++b)
            bs.push_back(b);
        for (int b = 0xA1; b <= 0xAC; ++b)
            bs.push_back(b);
        for (int b = 0xAE; b <= 0xFF; ++b)
            bs.push_back(b);
        std::vector<bool> seen(256, false);
        for (int b : bs)
            seen[std::size_t(b)] = true;
        std::uint32_t next = 256;
        for (int b = 0; b < 256; ++b) {
            const std::uint32_t cp = seen[std::size_t(b)] ? std::uint32_t(b) : next++;
            out.byteChar[b] = utf8Of(cp);
            out.charByte[cp] = static_cast<unsigned char>(b);
        }
    }
    out.byteFallback = model.value("byte_fallback", false);
    out.fuseUnk = model.value("fuse_unk", false);
    if (!model.value("continuing_subword_prefix", json()).is_null() ||
        !model.value("end_of_word_suffix", json()).is_null())
        return refuse(file, "BPE with a subword prefix or word suffix is not supported");
    out.ignoreMerges = model.value("ignore_merges", false);
    for (const auto &[token, id] : model.at("vocab").items())
        out.vocab.emplace(token, id.get<TokenId>());
    int r = 0;
    for (const json &merge : model.at("merges")) {
        std::string left, right;
        if (merge.is_string()) {
            const std::string s = merge.get<std::string>();
            const auto space = s.find(' ');
            if (space == std::string::npos)
                return refuse(file, "merge \"" + s + "\" is not two symbols");
            left = s.substr(0, space);
            right = s.substr(space + 1);
        } else {
            left = merge.at(0).get<std::string>();
            right = merge.at(1).get<std::string>();
        }
        out.rank.emplace(left + '\0' + right, r++);
    }
    if (const json &unk = model.value("unk_token", json()); unk.is_string())
        if (const auto it = out.vocab.find(unk.get<std::string>()); it != out.vocab.end())
            out.unk = it->second;
    return Status::ok();
}

void BpeModel::encode(const std::string &piece, std::vector<TokenId> &out) const
{
    std::string mapped;
    if (byteLevel)
        for (char c : piece)
            mapped += byteChar[static_cast<unsigned char>(c)];
    else
        mapped = piece;
    if (ignoreMerges)
        if (const auto it = vocab.find(mapped); it != vocab.end()) {
            out.push_back(it->second);
            return;
        }
    std::vector<std::string> symbols;
    for (std::string &c : characters(mapped)) {
        if (!byteFallback || vocab.count(c)) {
            symbols.push_back(std::move(c));
            continue;
        }
        // byte_fallback: each byte's <0xNN> token, when all exist.
        std::vector<std::string> bytes;
        for (unsigned char b : c) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            if (vocab.count(name))
                bytes.push_back(name);
        }
        if (bytes.size() == c.size())
            symbols.insert(symbols.end(), bytes.begin(), bytes.end());
        else
            symbols.push_back(std::move(c));
    }
    std::string key;
    while (symbols.size() > 1) {
        int best = std::numeric_limits<int>::max();
        for (std::size_t i = 0; i + 1 < symbols.size(); ++i) {
            key = symbols[i];
            key += '\0';
            key += symbols[i + 1];
            if (const auto it = rank.find(key); it != rank.end() && it->second < best)
                best = it->second;
        }
        if (best == std::numeric_limits<int>::max())
            break;
        std::vector<std::string> merged;
        for (std::size_t i = 0; i < symbols.size(); ++i) {
            if (i + 1 < symbols.size()) {
                key = symbols[i];
                key += '\0';
                key += symbols[i + 1];
                if (const auto it = rank.find(key); it != rank.end() && it->second == best) {
                    merged.push_back(symbols[i] + symbols[i + 1]);
                    ++i;
                    continue;
                }
            }
            merged.push_back(symbols[i]);
        }
        symbols = std::move(merged);
    }
    bool lastUnk = false;
    for (const std::string &s : symbols) {
        if (const auto it = vocab.find(s); it != vocab.end()) {
            out.push_back(it->second);
            lastUnk = false;
        } else if (unk && !(fuseUnk && lastUnk)) {
            out.push_back(*unk);
            lastUnk = true;
        }
    }
}

std::string BpeModel::bytesOf(const std::string &token) const
{
    if (!byteLevel) {
        unsigned byte = 0;
        if (token.size() == 6 && std::sscanf(token.c_str(), "<0x%2X>", &byte) == 1 && token[5] == '>')
            return std::string(1, char(byte));
        std::string text = token;
        for (std::size_t at = text.find(spaceMark); at != std::string::npos && !spaceMark.empty();
             at = text.find(spaceMark, at + 1))
            text.replace(at, spaceMark.size(), " ");
        return text;
    }
    std::string bytes;
    for (const std::string &c : characters(token)) {
        const auto it = charByte.find(codePoint(c));
        bytes += it != charByte.end() ? std::string(1, char(it->second)) : c;
    }
    return bytes;
}

} // namespace bp::hf
