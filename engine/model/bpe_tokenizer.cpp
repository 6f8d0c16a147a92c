#include "bpe_tokenizer.h"

#include "tokenizer_text_stages.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

namespace bp {

namespace {

using json = nlohmann::json;

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

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

} // namespace

struct BpeTokenizer::Impl {
    std::string file;
    std::unordered_map<std::string, TokenId> vocab;
    std::vector<std::string> tokenOf; // id -> its string (byte-level alphabet, or an added token's content)
    std::unordered_map<std::string, int> rank; // left + '\0' + right -> merge rank
    bool ignoreMerges = false;
    std::optional<TokenId> unk;
    struct Added {
        std::string content;
        TokenId id = 0;
        bool special = false, lstrip = false, rstrip = false;
    };
    std::vector<Added> added; // longest first
    std::vector<bool> special;
    std::vector<bool> isAdded;
    hf::TextStages stages;
    bool byteLevel = true;     // GPT-2's byte-to-character alphabet (else SentencePiece-style pieces)
    bool byteFallback = false; // a character outside the vocabulary as its <0xNN> byte tokens
    bool fuseUnk = false;      // consecutive unknown characters as one unk
    bool stripFirstSpace =
        false; // the decoder's Strip / Metaspace: decodeAsTransformers drops one leading space
    std::string spaceMark = "\u2581";    // what the SentencePiece-style decoder turns back into a space
    std::vector<TokenId> prefix, suffix; // the post-processor's single template
    std::string byteChar[256];
    std::unordered_map<std::uint32_t, unsigned char> charByte;
    std::string chatTemplateNote;

    void bpe(const std::string &piece, std::vector<TokenId> &out) const
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

    void encodeText(const std::string &text, bool atStart, std::vector<TokenId> &out) const
    {
        if (text.empty())
            return;
        for (const std::string &piece : stages.preTokenize(stages.normalize(text), atStart))
            if (!piece.empty())
                bpe(piece, out);
    }
};

namespace {

Status refuse(const std::string &file, const std::string &what)
{
    return Status(StatusCode::InvalidArgument, file + ": " + what);
}

Status collectPost(const json &j, const std::string &file, std::vector<TokenId> &prefix,
                   std::vector<TokenId> &suffix)
{
    if (j.is_null())
        return Status::ok();
    const std::string type = j.value("type", std::string());
    if (type == "ByteLevel")
        return Status::ok();
    if (type == "Sequence") {
        for (const json &p : j.at("processors"))
            if (Status s = collectPost(p, file, prefix, suffix); !s)
                return s;
        return Status::ok();
    }
    if (type != "TemplateProcessing")
        return refuse(file, "post-processor " + type +
                                " is not supported (TemplateProcessing, ByteLevel, Sequence)");
    bool afterA = false;
    for (const json &piece : j.at("single")) {
        if (piece.contains("Sequence")) {
            afterA = true;
            continue;
        }
        if (!piece.contains("SpecialToken"))
            return refuse(file, "a TemplateProcessing piece that is neither a SpecialToken nor the sequence");
        const std::string name = piece["SpecialToken"].at("id").get<std::string>();
        const auto &specials = j.at("special_tokens");
        if (!specials.contains(name) || specials[name].at("ids").empty())
            return refuse(file, "TemplateProcessing names special token " + name + " without ids");
        for (const json &id : specials[name]["ids"])
            (afterA ? suffix : prefix).push_back(id.get<TokenId>());
    }
    return Status::ok();
}

// The decoder: ByteLevel (byte-level BPE), or SentencePiece style: Metaspace,
// or a Sequence of Replace(mark -> " "), ByteFallback, Fuse and Strip(" ", 1, 0)
// as transformers writes Llama 2's, Mistral's and Gemma's.
Status readDecoder(const json &d, const std::string &file, BpeTokenizer::Impl &impl)
{
    if (d.is_null())
        return Status::ok();
    const std::string type = d.value("type", std::string());
    if (type == "ByteLevel") {
        impl.byteLevel = true;
        return Status::ok();
    }
    impl.byteLevel = false;
    if (type == "Metaspace") {
        impl.spaceMark = d.value("replacement", std::string("\u2581"));
        const std::string scheme =
            d.value("prepend_scheme", std::string(d.value("add_prefix_space", true) ? "always" : "never"));
        impl.stripFirstSpace = scheme != "never";
        return Status::ok();
    }
    const std::string supported =
        "(ByteLevel, Metaspace, or a Sequence of Replace, ByteFallback, Fuse and Strip are)";
    if (type != "Sequence")
        return refuse(file, "decoder " + type + " is not supported " + supported);
    for (const json &step : d.at("decoders")) {
        const std::string t = step.value("type", std::string());
        if (t == "Replace" && step.at("pattern").contains("String") &&
            step.value("content", std::string()) == " ") {
            impl.spaceMark = step["pattern"]["String"].get<std::string>();
        } else if (t == "Strip" && step.value("content", std::string()) == " " &&
                   step.value("start", 0) <= 1 && step.value("stop", 0) == 0) {
            impl.stripFirstSpace = step.value("start", 0) == 1;
        } else if (t != "ByteFallback" && t != "Fuse") {
            return refuse(file, "decoder step " + t + " (" + step.dump() + ") is not supported " + supported);
        }
    }
    return Status::ok();
}

} // namespace

BpeTokenizer::BpeTokenizer(std::unique_ptr<Impl> impl) : m(std::move(impl)) {}
BpeTokenizer::~BpeTokenizer() = default;

Result<std::shared_ptr<BpeTokenizer>> BpeTokenizer::load(const std::string &path)
{
    std::ifstream in(path);
    if (!in)
        return Status(StatusCode::NotFound, path + ": cannot read it");
    const json j = json::parse(in, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return Status(StatusCode::InvalidArgument, path + ": not JSON");
    auto impl = std::make_unique<Impl>();
    impl->file = path;
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
            impl->byteChar[b] = utf8Of(cp);
            impl->charByte[cp] = static_cast<unsigned char>(b);
        }
    }
    try {
        const json &model = j.at("model");
        if (model.value("type", std::string("BPE")) != "BPE")
            return refuse(path,
                          "model type " + model.value("type", std::string()) + " is not supported (BPE is)");
        impl->byteFallback = model.value("byte_fallback", false);
        impl->fuseUnk = model.value("fuse_unk", false);
        if (!model.value("continuing_subword_prefix", json()).is_null() ||
            !model.value("end_of_word_suffix", json()).is_null())
            return refuse(path, "BPE with a subword prefix or word suffix is not supported");
        impl->ignoreMerges = model.value("ignore_merges", false);
        TokenId largest = -1;
        for (const auto &[token, id] : model.at("vocab").items()) {
            impl->vocab.emplace(token, id.get<TokenId>());
            largest = std::max(largest, id.get<TokenId>());
        }
        int r = 0;
        for (const json &merge : model.at("merges")) {
            std::string left, right;
            if (merge.is_string()) {
                const std::string s = merge.get<std::string>();
                const auto space = s.find(' ');
                if (space == std::string::npos)
                    return refuse(path, "merge \"" + s + "\" is not two symbols");
                left = s.substr(0, space);
                right = s.substr(space + 1);
            } else {
                left = merge.at(0).get<std::string>();
                right = merge.at(1).get<std::string>();
            }
            impl->rank.emplace(left + '\0' + right, r++);
        }
        if (const json &unk = model.value("unk_token", json()); unk.is_string())
            if (const auto it = impl->vocab.find(unk.get<std::string>()); it != impl->vocab.end())
                impl->unk = it->second;
        for (const json &a : j.value("added_tokens", json::array())) {
            Impl::Added added{a.at("content").get<std::string>(), a.at("id").get<TokenId>(),
                              a.value("special", false), a.value("lstrip", false), a.value("rstrip", false)};
            largest = std::max(largest, added.id);
            impl->added.push_back(added);
        }
        std::stable_sort(
            impl->added.begin(), impl->added.end(),
            [](const Impl::Added &a, const Impl::Added &b) { return a.content.size() > b.content.size(); });
        impl->tokenOf.assign(std::size_t(largest + 1), std::string());
        impl->special.assign(std::size_t(largest + 1), false);
        impl->isAdded.assign(std::size_t(largest + 1), false);
        for (const auto &[token, id] : impl->vocab)
            impl->tokenOf[std::size_t(id)] = token;
        for (const Impl::Added &a : impl->added) {
            impl->tokenOf[std::size_t(a.id)] = a.content;
            impl->special[std::size_t(a.id)] = a.special;
            impl->isAdded[std::size_t(a.id)] = true;
        }
        if (Status s = hf::TextStages::parse(j.value("normalizer", json()), j.value("pre_tokenizer", json()),
                                             path, impl->stages);
            !s)
            return s;
        if (Status s = collectPost(j.value("post_processor", json()), path, impl->prefix, impl->suffix); !s)
            return s;
        impl->byteLevel = impl->stages.byteLevel();
        if (Status s = readDecoder(j.value("decoder", json()), path, *impl); !s)
            return s;
    } catch (const json::exception &e) {
        return refuse(path, std::string("malformed: ") + e.what());
    }
    const int vocabSize = int(impl->tokenOf.size());
    auto out = std::shared_ptr<BpeTokenizer>(new BpeTokenizer(std::move(impl)));
    out->m_vocabSize = vocabSize;
    // The chat template beside it. A missing or broken one does not stop
    // the model from serving completions: chatPrompt() says why it cannot.
    auto chat = ChatTemplate::load(std::filesystem::path(path).parent_path().string());
    if (chat)
        out->m_chat = std::move(*chat);
    else
        out->m->chatTemplateNote = chat.status().message();
    return out;
}

std::string BpeTokenizer::describe() const
{
    return std::string(m->byteLevel ? "byte-level" : "SentencePiece-style") + " BPE from " + m->file + " (" +
           std::to_string(m_vocabSize) + " ids, " + std::to_string(m->rank.size()) + " merges)";
}

std::optional<TokenId> BpeTokenizer::idOf(const std::string &token) const
{
    for (const Impl::Added &a : m->added)
        if (a.content == token)
            return a.id;
    if (const auto it = m->vocab.find(token); it != m->vocab.end())
        return it->second;
    return std::nullopt;
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view input, bool addSpecial) const
{
    const std::string text = repairUtf8(input); // the splitter needs valid UTF-8
    std::vector<TokenId> out;
    if (addSpecial)
        out = m->prefix;
    std::size_t start = 0; // of the plain text not yet encoded
    std::size_t i = 0;
    while (i < text.size()) {
        const Impl::Added *hit = nullptr;
        for (const Impl::Added &a : m->added)
            if (!a.content.empty() && text.compare(i, a.content.size(), a.content) == 0) {
                hit = &a;
                break; // longest first
            }
        if (!hit) {
            ++i;
            continue;
        }
        std::size_t plainEnd = i;
        if (hit->lstrip)
            while (plainEnd > start && isSpace(text[plainEnd - 1]))
                --plainEnd;
        m->encodeText(text.substr(start, plainEnd - start), start == 0, out);
        out.push_back(hit->id);
        i += hit->content.size();
        if (hit->rstrip)
            while (i < text.size() && isSpace(text[i]))
                ++i;
        start = i;
    }
    m->encodeText(text.substr(start), start == 0, out);
    if (addSpecial)
        out.insert(out.end(), m->suffix.begin(), m->suffix.end());
    return out;
}

std::string BpeTokenizer::tokenBytes(TokenId id, bool skipSpecial) const
{
    if (id < 0 || std::size_t(id) >= m->tokenOf.size() ||
        (m->tokenOf[std::size_t(id)].empty() && !m->isAdded[std::size_t(id)]))
        return "\xEF\xBF\xBD";
    if (m->isAdded[std::size_t(id)])
        return m->special[std::size_t(id)] && skipSpecial ? std::string() : m->tokenOf[std::size_t(id)];
    const std::string &token = m->tokenOf[std::size_t(id)];
    if (!m->byteLevel) {
        unsigned byte = 0;
        if (token.size() == 6 && std::sscanf(token.c_str(), "<0x%2X>", &byte) == 1 && token[5] == '>')
            return std::string(1, char(byte));
        std::string text = token;
        for (std::size_t at = text.find(m->spaceMark); at != std::string::npos && !m->spaceMark.empty();
             at = text.find(m->spaceMark, at + 1))
            text.replace(at, m->spaceMark.size(), " ");
        return text;
    }
    std::string bytes;
    for (const std::string &c : characters(token)) {
        const auto it = m->charByte.find(codePoint(c));
        bytes += it != m->charByte.end() ? std::string(1, char(it->second)) : c;
    }
    return bytes;
}

std::string BpeTokenizer::decodeAsTransformers(std::span<const TokenId> ids, bool skipSpecial) const
{
    std::string text = decode(ids, skipSpecial);
    if (m->stripFirstSpace && !text.empty() && text[0] == ' ')
        text.erase(0, 1);
    return text;
}

Result<std::string> BpeTokenizer::chatPrompt(const std::vector<ChatMessage> &messages) const
{
    if (m_chat)
        return m_chat->render(messages, true);
    return Status(StatusCode::InvalidArgument, "this model has no chat template (" + m->chatTemplateNote +
                                                   "): send the prompt yourself to /v1/completions");
}

} // namespace bp
