#include "bpe_tokenizer.h"

#include "bpe_model.h"
#include "tokenizer_text_stages.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace bp {

namespace {

using json = nlohmann::json;

bool isSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

} // namespace

struct BpeTokenizer::Impl {
    std::string file;
    hf::BpeModel model;
    std::vector<std::string> tokenOf; // id -> its string (the model's piece, or an added token's content)
    struct Added {
        std::string content;
        TokenId id = 0;
        bool special = false, lstrip = false, rstrip = false;
    };
    std::vector<Added> added; // longest first
    std::vector<bool> special;
    std::vector<bool> isAdded;
    hf::TextStages stages;
    // The decoder's Strip / Metaspace: decodeAsTransformers drops one leading space.
    bool stripFirstSpace = false;
    std::vector<TokenId> prefix, suffix; // the post-processor's single template
    std::string chatTemplateNote;

    void encodeText(const std::string &text, bool atStart, std::vector<TokenId> &out) const
    {
        if (text.empty())
            return;
        for (const std::string &piece : stages.preTokenize(stages.normalize(text), atStart))
            if (!piece.empty())
                model.encode(piece, out);
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
        impl.model.byteLevel = true;
        return Status::ok();
    }
    impl.model.byteLevel = false;
    if (type == "Metaspace") {
        impl.model.spaceMark = d.value("replacement", std::string("\u2581"));
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
            impl.model.spaceMark = step["pattern"]["String"].get<std::string>();
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
    try {
        if (Status s = hf::BpeModel::parse(j.at("model"), path, impl->model); !s)
            return s;
        TokenId largest = -1;
        for (const auto &[token, id] : impl->model.vocab)
            largest = std::max(largest, id);
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
        for (const auto &[token, id] : impl->model.vocab)
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
        impl->model.byteLevel = impl->stages.byteLevel();
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
    return std::string(m->model.byteLevel ? "byte-level" : "SentencePiece-style") + " BPE from " + m->file +
           " (" + std::to_string(m_vocabSize) + " ids, " + std::to_string(m->model.rank.size()) + " merges)";
}

std::optional<TokenId> BpeTokenizer::idOf(const std::string &token) const
{
    for (const Impl::Added &a : m->added)
        if (a.content == token)
            return a.id;
    if (const auto it = m->model.vocab.find(token); it != m->model.vocab.end())
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
    return m->model.bytesOf(m->tokenOf[std::size_t(id)]);
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
