#include "bpe_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

namespace bp {

namespace {

using json = nlohmann::json;

// GPT-2's split pattern, what ByteLevel(use_regex: true) applies.
constexpr const char *kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

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

class Regex {
public:
    static Result<std::unique_ptr<Regex>> compile(const std::string &pattern, const std::string &where)
    {
        int error = 0;
        PCRE2_SIZE offset = 0;
        pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(),
                                         PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
        if (!code) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(error, message, sizeof message);
            return Status(StatusCode::InvalidArgument, where + ": the split pattern does not compile at " +
                                                           std::to_string(offset) + ": " +
                                                           reinterpret_cast<const char *>(message));
        }
        pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); // optional: matching works without it
        return std::unique_ptr<Regex>(new Regex(code));
    }
    ~Regex() { pcre2_code_free(m_code); }
    // [begin, end) of every match in `s`, in order.
    std::vector<std::pair<std::size_t, std::size_t>> matches(const std::string &s) const
    {
        std::vector<std::pair<std::size_t, std::size_t>> out;
        pcre2_match_data *md = pcre2_match_data_create_from_pattern(m_code, nullptr);
        std::size_t at = 0;
        while (at <= s.size()) {
            const int rc = pcre2_match(m_code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), at,
                                       PCRE2_NO_UTF_CHECK, md, nullptr);
            if (rc < 0)
                break;
            const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
            std::size_t begin = ov[0], end = ov[1];
            if (end == begin) { // an empty match: step over one character
                if (begin >= s.size())
                    break;
                std::size_t next = begin + 1;
                while (next < s.size() && (static_cast<unsigned char>(s[next]) & 0xC0) == 0x80)
                    ++next;
                at = next;
                continue;
            }
            out.emplace_back(begin, end);
            at = end;
        }
        pcre2_match_data_free(md);
        return out;
    }

private:
    explicit Regex(pcre2_code *code) : m_code(code) {}
    pcre2_code *m_code;
};

struct PreStep {
    enum class Kind { Split, SplitString, ByteLevel } kind = Kind::ByteLevel;
    std::unique_ptr<Regex> regex; // Split, ByteLevel with use_regex
    std::string literal;          // SplitString
    bool removed = false;         // Split behavior Removed (else Isolated)
    bool addPrefixSpace = false;  // ByteLevel
};

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
    bool nfc = false;
    std::vector<PreStep> pre;
    std::vector<TokenId> prefix, suffix; // the post-processor's single template
    std::string byteChar[256];
    std::unordered_map<std::uint32_t, unsigned char> charByte;
    std::string chatTemplateNote;

    std::vector<std::string> preTokenize(const std::string &text) const
    {
        std::vector<std::string> pieces{text};
        for (const PreStep &step : pre) {
            std::vector<std::string> next;
            for (std::string &piece : pieces) {
                if (step.kind == PreStep::Kind::ByteLevel && step.addPrefixSpace &&
                    &piece == &pieces.front() && !piece.empty() && piece[0] != ' ')
                    piece.insert(piece.begin(), ' ');
                if (step.kind == PreStep::Kind::ByteLevel && !step.regex) {
                    next.push_back(piece);
                    continue;
                }
                std::vector<std::pair<std::size_t, std::size_t>> found;
                if (step.kind == PreStep::Kind::SplitString) {
                    for (std::size_t at = piece.find(step.literal);
                         at != std::string::npos && !step.literal.empty();
                         at = piece.find(step.literal, at + step.literal.size()))
                        found.emplace_back(at, at + step.literal.size());
                } else {
                    found = step.regex->matches(piece);
                }
                std::size_t last = 0;
                for (const auto &[b, e] : found) {
                    if (b > last)
                        next.push_back(piece.substr(last, b - last));
                    if (!step.removed)
                        next.push_back(piece.substr(b, e - b));
                    last = e;
                }
                if (last < piece.size())
                    next.push_back(piece.substr(last));
            }
            pieces = std::move(next);
        }
        return pieces;
    }

    void bpe(const std::string &piece, std::vector<TokenId> &out) const
    {
        std::string mapped;
        for (char c : piece)
            mapped += byteChar[static_cast<unsigned char>(c)];
        if (ignoreMerges)
            if (const auto it = vocab.find(mapped); it != vocab.end()) {
                out.push_back(it->second);
                return;
            }
        std::vector<std::string> symbols = characters(mapped);
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
        for (const std::string &s : symbols) {
            if (const auto it = vocab.find(s); it != vocab.end())
                out.push_back(it->second);
            else if (unk)
                out.push_back(*unk);
        }
    }

    void encodeText(const std::string &text, std::vector<TokenId> &out) const
    {
        if (text.empty())
            return;
        std::string normalized = text;
        if (nfc) {
            if (utf8proc_uint8_t *n =
                    utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t *>(text.c_str()))) {
                normalized = reinterpret_cast<const char *>(n);
                std::free(n);
            }
        }
        for (const std::string &piece : preTokenize(normalized))
            if (!piece.empty())
                bpe(piece, out);
    }
};

namespace {

Status refuse(const std::string &file, const std::string &what)
{
    return Status(StatusCode::InvalidArgument, file + ": " + what);
}

Result<PreStep> preStep(const json &j, const std::string &file)
{
    const std::string type = j.value("type", std::string());
    PreStep step;
    if (type == "ByteLevel") {
        step.kind = PreStep::Kind::ByteLevel;
        step.addPrefixSpace = j.value("add_prefix_space", false);
        if (j.value("use_regex", true)) {
            auto re = Regex::compile(kGpt2Pattern, file);
            if (!re)
                return re.status();
            step.regex = std::move(*re);
        }
        return step;
    }
    if (type == "Split") {
        if (j.value("invert", false))
            return refuse(file, "a Split pre-tokenizer with invert: true is not supported");
        const std::string behavior = j.value("behavior", std::string("Isolated"));
        if (behavior != "Isolated" && behavior != "Removed")
            return refuse(file, "a Split pre-tokenizer with behavior " + behavior +
                                    " is not supported (Isolated and Removed are)");
        step.removed = behavior == "Removed";
        const json &pattern = j.at("pattern");
        if (pattern.contains("Regex")) {
            step.kind = PreStep::Kind::Split;
            auto re = Regex::compile(pattern["Regex"].get<std::string>(), file);
            if (!re)
                return re.status();
            step.regex = std::move(*re);
        } else {
            step.kind = PreStep::Kind::SplitString;
            step.literal = pattern.value("String", std::string());
        }
        return step;
    }
    return refuse(file, "pre-tokenizer " + (type.empty() ? std::string("?") : type) +
                            " is not supported (ByteLevel, Split and Sequence are; SentencePiece-style "
                            "Metaspace tokenizers are not)");
}

Status collectPre(const json &j, const std::string &file, std::vector<PreStep> &out)
{
    if (j.is_null())
        return Status::ok();
    if (j.value("type", std::string()) == "Sequence") {
        for (const json &p : j.at("pretokenizers"))
            if (Status s = collectPre(p, file, out); !s)
                return s;
        return Status::ok();
    }
    auto step = preStep(j, file);
    if (!step)
        return step.status();
    out.push_back(std::move(*step));
    return Status::ok();
}

Status collectNormalizer(const json &j, const std::string &file, bool &nfc)
{
    if (j.is_null())
        return Status::ok();
    const std::string type = j.value("type", std::string());
    if (type == "NFC") {
        nfc = true;
        return Status::ok();
    }
    if (type == "Sequence") {
        for (const json &n : j.at("normalizers"))
            if (Status s = collectNormalizer(n, file, nfc); !s)
                return s;
        return Status::ok();
    }
    return refuse(file, "normalizer " + type + " is not supported (NFC and Sequence are)");
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
        if (model.value("byte_fallback", false))
            return refuse(path, "BPE with byte_fallback (SentencePiece style) is not supported");
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
        if (Status s = collectNormalizer(j.value("normalizer", json()), path, impl->nfc); !s)
            return s;
        if (Status s = collectPre(j.value("pre_tokenizer", json()), path, impl->pre); !s)
            return s;
        if (Status s = collectPost(j.value("post_processor", json()), path, impl->prefix, impl->suffix); !s)
            return s;
        const json decoder = j.value("decoder", json());
        if (!decoder.is_null() && decoder.value("type", std::string()) != "ByteLevel")
            return refuse(path, "decoder " + decoder.value("type", std::string()) +
                                    " is not supported (ByteLevel is)");
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
    return "byte-level BPE from " + m->file + " (" + std::to_string(m_vocabSize) + " ids, " +
           std::to_string(m->rank.size()) + " merges)";
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
        m->encodeText(text.substr(start, plainEnd - start), out);
        out.push_back(hit->id);
        i += hit->content.size();
        if (hit->rstrip)
            while (i < text.size() && isSpace(text[i]))
                ++i;
        start = i;
    }
    m->encodeText(text.substr(start), out);
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
    std::string bytes;
    for (const std::string &c : characters(m->tokenOf[std::size_t(id)])) {
        const auto it = m->charByte.find(codePoint(c));
        bytes += it != m->charByte.end() ? std::string(1, char(it->second)) : c;
    }
    return bytes;
}

Result<std::string> BpeTokenizer::chatPrompt(const std::vector<ChatMessage> &messages) const
{
    if (m_chat)
        return m_chat->render(messages, true);
    return Status(StatusCode::InvalidArgument, "this model has no chat template (" + m->chatTemplateNote +
                                                   "): send the prompt yourself to /v1/completions");
}

} // namespace bp
