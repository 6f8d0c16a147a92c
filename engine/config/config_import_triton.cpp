// import-config's reader of Triton's model configuration: config.pbtxt
// (protobuf text format) or the JSON Triton serves at GET
// /v2/models/NAME/config (the ModelConfig message with its proto field
// names, 64-bit fields as numbers: triton-inference-server/core
// src/model_config_utils.cc, ModelConfigToJson). Both become one tree of
// fields, read by one mapping (model_config.proto's batching fields:
// max_batch_size, dynamic_batching, instance_group, response_cache).
#include "config_import_detail.h"

#include <algorithm>
#include <cctype>
#include <memory>

namespace bp::import_detail {

namespace {

struct PbMessage;
struct PbValue {
    std::string scalar;
    std::shared_ptr<PbMessage> message; // set for a message
    int line = 0;
};
struct PbMessage {
    std::vector<std::pair<std::string, PbValue>> fields; // repeated fields repeat
    std::vector<const PbValue *> all(std::string_view name) const
    {
        std::vector<const PbValue *> out;
        for (const auto &[n, v] : fields)
            if (n == name)
                out.push_back(&v);
        return out;
    }
    const PbValue *first(std::string_view name) const
    {
        const auto v = all(name);
        return v.empty() ? nullptr : v.front();
    }
};

struct Token {
    std::string text;
    int line = 0;
    bool quoted = false;
};

Result<std::vector<Token>> tokenize(std::string_view s)
{
    std::vector<Token> out;
    int line = 1;
    for (std::size_t i = 0; i < s.size();) {
        const char c = s[i];
        if (c == '\n') {
            ++line;
            ++i;
        } else if (std::isspace(static_cast<unsigned char>(c))) {
            ++i;
        } else if (c == '#') {
            while (i < s.size() && s[i] != '\n')
                ++i;
        } else if (c == '"' || c == '\'') {
            Token t{"", line, true};
            for (++i; i < s.size() && s[i] != c; ++i) {
                if (s[i] == '\n')
                    return Status(StatusCode::InvalidArgument,
                                  at(t.line) + "a string is not closed on its line");
                if (s[i] == '\\' && i + 1 < s.size())
                    ++i;
                t.text += s[i];
            }
            if (i >= s.size())
                return Status(StatusCode::InvalidArgument, at(t.line) + "a string is never closed");
            ++i;
            out.push_back(std::move(t));
        } else if (std::string_view(":{}[]<>,;").find(c) != std::string_view::npos) {
            out.push_back({std::string(1, c), line, false});
            ++i;
        } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '+' ||
                   c == '.') {
            Token t{"", line, false};
            while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_' ||
                                    s[i] == '-' || s[i] == '+' || s[i] == '.'))
                t.text += s[i++];
            out.push_back(std::move(t));
        } else {
            return Status(StatusCode::InvalidArgument,
                          at(line) + "unexpected character '" + std::string(1, c) + "'");
        }
    }
    return out;
}

class PbParser {
public:
    explicit PbParser(std::vector<Token> tokens) : m_t(std::move(tokens)) {}

    Result<PbMessage> parse()
    {
        PbMessage root;
        if (Status s = fields(root, "", 0, ""); !s)
            return s;
        return root;
    }

private:
    bool at(std::string_view t) const
    {
        return m_pos < m_t.size() && !m_t[m_pos].quoted && m_t[m_pos].text == t;
    }
    int line() const { return m_pos < m_t.size() ? m_t[m_pos].line : (m_t.empty() ? 1 : m_t.back().line); }
    Status error(const std::string &what) const
    {
        return Status(StatusCode::InvalidArgument, import_detail::at(line()) + what);
    }
    static bool isName(const Token &t)
    {
        return !t.quoted && !t.text.empty() &&
               (std::isalpha(static_cast<unsigned char>(t.text[0])) || t.text[0] == '_');
    }

    // Fields until `close` ("" = the end of the input) of the message
    // `owner` opened on line `opened`.
    Status fields(PbMessage &m, std::string_view close, int opened, const std::string &owner)
    {
        while (m_pos < m_t.size() && !(close.size() && at(close))) {
            if (!isName(m_t[m_pos]))
                return error("expected a field name, got '" + m_t[m_pos].text + "'");
            const Token name = m_t[m_pos++];
            const bool colon = at(":");
            if (colon)
                ++m_pos;
            if (at("{") || at("<")) {
                auto v = message(name.text);
                if (!v)
                    return v.status();
                m.fields.emplace_back(name.text, std::move(*v));
            } else if (at("[")) {
                const int opened = line();
                ++m_pos;
                while (!at("]")) {
                    if (m_pos >= m_t.size())
                        return Status(StatusCode::InvalidArgument, import_detail::at(opened) + "the '[' of " +
                                                                       name.text + " is never closed");
                    if (at("{") || at("<")) {
                        auto v = message(name.text);
                        if (!v)
                            return v.status();
                        m.fields.emplace_back(name.text, std::move(*v));
                    } else if (colon && isValue()) {
                        m.fields.emplace_back(name.text, PbValue{m_t[m_pos].text, nullptr, m_t[m_pos].line});
                        ++m_pos;
                    } else {
                        return error("expected a value in the list of " + name.text);
                    }
                    if (at(","))
                        ++m_pos;
                    else if (!at("]"))
                        return error("expected ',' or ']' in the list of " + name.text);
                }
                ++m_pos;
            } else if (colon && isValue()) {
                m.fields.emplace_back(name.text, PbValue{m_t[m_pos].text, nullptr, m_t[m_pos].line});
                ++m_pos;
            } else {
                return error("expected a value after '" + name.text + (colon ? ":'" : "'"));
            }
            if (at(",") || at(";"))
                ++m_pos;
        }
        if (close.size() && m_pos >= m_t.size())
            return Status(StatusCode::InvalidArgument, import_detail::at(opened) + "the '" +
                                                           std::string(close == "}" ? "{" : "<") + "' of " +
                                                           owner + " is never closed");
        return Status::ok();
    }

    bool isValue() const
    {
        return m_pos < m_t.size() &&
               (m_t[m_pos].quoted ||
                std::string_view(":{}[]<>,;").find(m_t[m_pos].text) == std::string_view::npos);
    }

    Result<PbValue> message(const std::string &owner)
    {
        const std::string close = at("{") ? "}" : ">";
        PbValue v;
        v.line = line();
        v.message = std::make_shared<PbMessage>();
        ++m_pos;
        if (Status s = fields(*v.message, close, v.line, owner); !s)
            return s;
        ++m_pos;
        return v;
    }

    std::vector<Token> m_t;
    std::size_t m_pos = 0;
};

PbValue fromJson(const nlohmann::json &j);

void addJsonField(PbMessage &m, const std::string &name, const nlohmann::json &v)
{
    if (v.is_array()) {
        for (const auto &e : v)
            m.fields.emplace_back(name, fromJson(e));
    } else if (!v.is_null()) {
        m.fields.emplace_back(name, fromJson(v));
    }
}

PbValue fromJson(const nlohmann::json &j)
{
    PbValue v;
    if (j.is_object()) {
        v.message = std::make_shared<PbMessage>();
        for (const auto &[k, e] : j.items())
            addJsonField(*v.message, k, e);
    } else if (j.is_string()) {
        v.scalar = j.get<std::string>();
    } else {
        v.scalar = j.dump();
    }
    return v;
}

// The batching fields of a ModelConfig (model_config.proto).
Result<ImportedConfig> fromModelConfig(const PbMessage &root)
{
    ImportBuilder b(ServerFormat::Triton);
    for (const char *name : {"name", "platform", "backend"})
        if (const PbValue *v = root.first(name); v && !v->message)
            b.setting(name, v->scalar);
    long long maxBatch = 0;
    int maxBatchLine = 0;
    if (const PbValue *v = root.first("max_batch_size")) {
        auto n = wholeNumber(v->scalar, v->line, "max_batch_size");
        if (!n)
            return n.status();
        maxBatch = *n;
        maxBatchLine = v->line;
        b.setting("max_batch_size", maxBatch);
    }
    const PbValue *db = root.first("dynamic_batching");
    if (db && !db->message)
        return Status(StatusCode::InvalidArgument,
                      at(db->line) + "dynamic_batching must be a message { ... }");
    std::vector<int> preferred;
    if (db) {
        const PbMessage &m = *db->message;
        for (const PbValue *p : m.all("preferred_batch_size")) {
            auto n = wholeNumber(p->scalar, p->line, "preferred_batch_size");
            if (!n)
                return n.status();
            preferred.push_back(int(*n));
        }
        b.setting("dynamic_batching.preferred_batch_size", preferred);
        for (const char *name : {"max_queue_delay_microseconds", "priority_levels", "default_priority_level",
                                 "preserve_ordering"})
            if (const PbValue *v = m.first(name); v && !v->message)
                b.setting(std::string("dynamic_batching.") + name, settingValue(v->scalar));
        if (const PbValue *q = m.first("default_queue_policy"); q && q->message)
            for (const auto &[n, v] : q->message->fields)
                if (!v.message)
                    b.setting("dynamic_batching.default_queue_policy." + n, settingValue(v.scalar));
    }
    if (maxBatch <= 0 && db)
        b.note(at(maxBatchLine) +
               "max_batch_size 0: the model does not batch, so dynamic_batching has no effect");
    const bool batching = db && maxBatch > 0;
    const PolicyKind policy = tritonPolicy(batching, preferred, int(maxBatch));
    b.knob("policy", double(int(policy)), db ? db->line : 0, "dynamic_batching");
    if (policy == PolicyKind::Static)
        b.knob("static_batch_size", double(maxBatch), maxBatchLine,
               "max_batch_size " + std::to_string(maxBatch));
    if (policy != PolicyKind::None)
        b.knob("max_batch_size", double(maxBatch), maxBatchLine,
               "max_batch_size " + std::to_string(maxBatch));
    if (policy != PolicyKind::None && !preferred.empty()) { // hybrid's static layer; kept for static too
        std::vector<int> sizes = preferred;
        std::sort(sizes.begin(), sizes.end());
        sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
        b.knobList("hybrid.static_sizes", sizes, db->line, "preferred_batch_size");
    }
    if (batching) {
        const PbMessage &m = *db->message;
        if (const PbValue *v = m.first("max_queue_delay_microseconds")) {
            auto n = wholeNumber(v->scalar, v->line, "max_queue_delay_microseconds");
            if (!n)
                return n.status();
            b.knob("max_queue_delay_us", double(*n), v->line, "max_queue_delay_microseconds " + v->scalar);
        }
        if (const PbValue *q = m.first("default_queue_policy"); q && q->message)
            if (const PbValue *v = q->message->first("max_queue_size")) {
                auto n = wholeNumber(v->scalar, v->line, "max_queue_size");
                if (!n)
                    return n.status();
                if (*n == 0)
                    b.note(at(v->line) +
                           "max_queue_size 0: Triton's queue is unbounded; queue_capacity not set");
                else
                    b.knob("queue_capacity", double(*n), v->line, "max_queue_size " + v->scalar);
            }
    }
    // Instances: `count` per group (per listed GPU when `gpus` are given).
    long long instances = 0;
    int groupLine = 0;
    nlohmann::json groups = nlohmann::json::array();
    for (const PbValue *g : root.all("instance_group")) {
        if (!g->message)
            return Status(StatusCode::InvalidArgument,
                          at(g->line) + "instance_group must hold messages { ... }");
        long long count = 1;
        if (const PbValue *c = g->message->first("count")) {
            auto n = wholeNumber(c->scalar, c->line, "count");
            if (!n)
                return n.status();
            count = *n;
        }
        const std::size_t gpus = g->message->all("gpus").size();
        const PbValue *kind = g->message->first("kind");
        groups.push_back({{"count", count}, {"kind", kind ? kind->scalar : ""}, {"gpus", gpus}});
        instances += count * std::max<long long>(1, static_cast<long long>(gpus));
        groupLine = groupLine ? groupLine : g->line;
    }
    if (!groups.empty()) {
        b.setting("instance_group", groups);
        b.knob("instances", double(instances), groupLine, "instance_group");
    }
    if (const PbValue *rc = root.first("response_cache"); rc && rc->message)
        if (const PbValue *e = rc->message->first("enable")) {
            auto on = boolean(e->scalar, e->line, "response_cache.enable");
            if (!on)
                return on.status();
            b.setting("response_cache.enable", *on);
            b.knob("cache.enabled", *on ? 1 : 0, e->line, "response_cache.enable");
        }
    if (root.first("sequence_batching"))
        b.note("sequence_batching: Triton's sequence batcher is not modelled");
    return b.take();
}

} // namespace

Result<ImportedConfig> importTritonText(std::string_view text)
{
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && text[first] == '{') {
        auto j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded())
            return Status(StatusCode::InvalidArgument,
                          "not JSON (a Triton model configuration starting with '{')");
        return tritonFromJson(j);
    }
    auto tokens = tokenize(text);
    if (!tokens)
        return tokens.status();
    auto root = PbParser(std::move(*tokens)).parse();
    if (!root)
        return root.status();
    return fromModelConfig(*root);
}

} // namespace bp::import_detail

namespace bp {

Result<ImportedConfig> tritonFromJson(const nlohmann::json &config)
{
    if (!config.is_object())
        return Status(StatusCode::InvalidArgument, "a Triton model configuration is a JSON object");
    const import_detail::PbValue root = import_detail::fromJson(config);
    return import_detail::fromModelConfig(*root.message);
}

} // namespace bp
