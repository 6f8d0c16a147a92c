#include "tokenizer_text_stages.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdlib>

namespace bp::hf {

using json = nlohmann::json;

namespace {

// GPT-2's split pattern, what ByteLevel(use_regex: true) applies.
constexpr const char *kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

Status refuse(const std::string &file, const std::string &what)
{
    return Status(StatusCode::InvalidArgument, file + ": " + what);
}

std::string replaceAll(std::string s, const std::string &from, const std::string &to)
{
    if (from.empty())
        return s;
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
}

} // namespace

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

struct TextStages::Norm {
    enum class Kind { Nfc, Prepend, Replace } kind = Kind::Nfc;
    std::string text, with; // Prepend's prefix; Replace's pattern and content
};

struct TextStages::Pre {
    enum class Kind { Split, SplitString, ByteLevel, Metaspace } kind = Kind::ByteLevel;
    std::unique_ptr<Regex> regex; // Split, ByteLevel with use_regex
    std::string literal;          // SplitString; Metaspace's replacement
    bool removed = false;         // Split behavior Removed (else Isolated)
    bool addPrefixSpace = false;  // ByteLevel
    enum class Prepend { Always, First, Never } prepend = Prepend::Always; // Metaspace
    bool split = true;                                                     // Metaspace
};

TextStages::TextStages() = default;
TextStages::TextStages(TextStages &&) noexcept = default;
TextStages &TextStages::operator=(TextStages &&) noexcept = default;
TextStages::~TextStages() = default;

Status TextStages::collectNorm(const json &j, const std::string &file, std::vector<Norm> &out)
{
    if (j.is_null())
        return Status::ok();
    const std::string type = j.value("type", std::string());
    Norm n;
    if (type == "NFC") {
        n.kind = Norm::Kind::Nfc;
    } else if (type == "Prepend") {
        n.kind = Norm::Kind::Prepend;
        n.text = j.at("prepend").get<std::string>();
    } else if (type == "Replace") {
        if (!j.at("pattern").contains("String"))
            return refuse(file, "a Replace normalizer with a Regex pattern is not supported (String is)");
        n.kind = Norm::Kind::Replace;
        n.text = j["pattern"]["String"].get<std::string>();
        n.with = j.at("content").get<std::string>();
    } else if (type == "Sequence") {
        for (const json &each : j.at("normalizers"))
            if (Status s = collectNorm(each, file, out); !s)
                return s;
        return Status::ok();
    } else {
        return refuse(file,
                      "normalizer " + type + " is not supported (NFC, Prepend, Replace and Sequence are)");
    }
    out.push_back(std::move(n));
    return Status::ok();
}

Status TextStages::collectPre(const json &j, const std::string &file, std::vector<Pre> &out)
{
    if (j.is_null())
        return Status::ok();
    const std::string type = j.value("type", std::string());
    if (type == "Sequence") {
        for (const json &p : j.at("pretokenizers"))
            if (Status s = collectPre(p, file, out); !s)
                return s;
        return Status::ok();
    }
    Pre step;
    if (type == "ByteLevel") {
        step.kind = Pre::Kind::ByteLevel;
        step.addPrefixSpace = j.value("add_prefix_space", false);
        if (j.value("use_regex", true)) {
            auto re = Regex::compile(kGpt2Pattern, file);
            if (!re)
                return re.status();
            step.regex = std::move(*re);
        }
    } else if (type == "Split") {
        if (j.value("invert", false))
            return refuse(file, "a Split pre-tokenizer with invert: true is not supported");
        const std::string behavior = j.value("behavior", std::string("Isolated"));
        if (behavior != "Isolated" && behavior != "Removed")
            return refuse(file, "a Split pre-tokenizer with behavior " + behavior +
                                    " is not supported (Isolated and Removed are)");
        step.removed = behavior == "Removed";
        const json &pattern = j.at("pattern");
        if (pattern.contains("Regex")) {
            step.kind = Pre::Kind::Split;
            auto re = Regex::compile(pattern["Regex"].get<std::string>(), file);
            if (!re)
                return re.status();
            step.regex = std::move(*re);
        } else {
            step.kind = Pre::Kind::SplitString;
            step.literal = pattern.value("String", std::string());
        }
    } else if (type == "Metaspace") {
        step.kind = Pre::Kind::Metaspace;
        step.literal = j.value("replacement", std::string("\u2581"));
        step.split = j.value("split", true);
        // Older files say add_prefix_space instead of prepend_scheme.
        const std::string scheme =
            j.value("prepend_scheme", std::string(j.value("add_prefix_space", true) ? "always" : "never"));
        if (scheme == "always")
            step.prepend = Pre::Prepend::Always;
        else if (scheme == "first")
            step.prepend = Pre::Prepend::First;
        else if (scheme == "never")
            step.prepend = Pre::Prepend::Never;
        else
            return refuse(file,
                          "Metaspace prepend_scheme " + scheme + " is not known (always, first, never)");
    } else {
        return refuse(file, "pre-tokenizer " + (type.empty() ? std::string("?") : type) +
                                " is not supported (ByteLevel, Split, Metaspace and Sequence are)");
    }
    out.push_back(std::move(step));
    return Status::ok();
}

Status TextStages::parse(const json &normalizer, const json &preTokenizer, const std::string &file,
                         TextStages &out)
{
    if (Status s = collectNorm(normalizer, file, out.m_norm); !s)
        return s;
    return collectPre(preTokenizer, file, out.m_pre);
}

bool TextStages::byteLevel() const
{
    for (const Pre &p : m_pre)
        if (p.kind == Pre::Kind::ByteLevel)
            return true;
    return false;
}

std::string TextStages::normalize(const std::string &text) const
{
    std::string out = text;
    for (const Norm &n : m_norm) {
        switch (n.kind) {
        case Norm::Kind::Nfc:
            if (utf8proc_uint8_t *s = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t *>(out.c_str()))) {
                out = reinterpret_cast<const char *>(s);
                std::free(s);
            }
            break;
        case Norm::Kind::Prepend:
            if (!out.empty())
                out = n.text + out;
            break;
        case Norm::Kind::Replace: out = replaceAll(std::move(out), n.text, n.with); break;
        }
    }
    return out;
}

std::vector<std::string> TextStages::preTokenize(const std::string &text, bool atStart) const
{
    std::vector<std::string> pieces{text};
    for (const Pre &step : m_pre) {
        std::vector<std::string> next;
        for (std::size_t k = 0; k < pieces.size(); ++k) {
            std::string &piece = pieces[k];
            if (step.kind == Pre::Kind::Metaspace) {
                piece = replaceAll(std::move(piece), " ", step.literal);
                const bool first = atStart && k == 0;
                if ((step.prepend == Pre::Prepend::Always ||
                     (step.prepend == Pre::Prepend::First && first)) &&
                    piece.compare(0, step.literal.size(), step.literal) != 0)
                    piece.insert(0, step.literal);
                if (!step.split) {
                    next.push_back(piece);
                    continue;
                }
                // Split before each replacement (merged with what follows).
                std::size_t from = 0;
                for (std::size_t at = piece.find(step.literal, 1); at != std::string::npos;
                     at = piece.find(step.literal, at + step.literal.size())) {
                    next.push_back(piece.substr(from, at - from));
                    from = at;
                }
                next.push_back(piece.substr(from));
                continue;
            }
            if (step.kind == Pre::Kind::ByteLevel && step.addPrefixSpace && k == 0 && !piece.empty() &&
                piece[0] != ' ')
                piece.insert(piece.begin(), ' ');
            if (step.kind == Pre::Kind::ByteLevel && !step.regex) {
                next.push_back(piece);
                continue;
            }
            std::vector<std::pair<std::size_t, std::size_t>> found;
            if (step.kind == Pre::Kind::SplitString) {
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

} // namespace bp::hf
