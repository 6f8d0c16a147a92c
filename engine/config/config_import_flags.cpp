// import-config's reader of command lines: `vllm serve` and
// `text-generation-launcher` (config_import.h).
#include "config_import_detail.h"
#include "knobs.h"

#include <algorithm>
#include <map>

namespace bp::import_detail {

Result<std::vector<Word>> shellWords(std::string_view s)
{
    std::vector<Word> out;
    int line = 1;
    std::size_t i = 0;
    while (i < s.size()) {
        const char c = s[i];
        if (c == '\n') {
            ++line;
            ++i;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == ';') {
            ++i;
            continue;
        }
        if (c == '#') {
            while (i < s.size() && s[i] != '\n')
                ++i;
            continue;
        }
        if (c == '\\' && i + 1 < s.size() && (s[i + 1] == '\n' || s[i + 1] == '\r')) {
            i += s[i + 1] == '\r' && i + 2 < s.size() && s[i + 2] == '\n' ? 3 : 2;
            ++line;
            continue;
        }
        Word w{"", line};
        while (i < s.size() && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' && s[i] != ';') {
            const char d = s[i];
            if (d == '\'' || d == '"') {
                const int opened = line;
                ++i;
                while (i < s.size() && s[i] != d) {
                    if (s[i] == '\n')
                        ++line;
                    if (d == '"' && s[i] == '\\' && i + 1 < s.size() &&
                        (s[i + 1] == '"' || s[i + 1] == '\\' || s[i + 1] == '$'))
                        ++i;
                    w.text += s[i++];
                }
                if (i >= s.size())
                    return Status(StatusCode::InvalidArgument,
                                  at(opened) + "the quote " + std::string(1, d) + " is never closed");
                ++i;
            } else if (d == '\\' && i + 1 < s.size() && s[i + 1] != '\n') {
                w.text += s[i + 1];
                i += 2;
            } else if (d == '\\') {
                break; // a line continuation ends the word
            } else {
                w.text += d;
                ++i;
            }
        }
        out.push_back(std::move(w));
    }
    return out;
}

namespace {

std::string snake(std::string_view flag)
{
    std::string s(flag);
    std::replace(s.begin(), s.end(), '-', '_');
    return s;
}

enum class Kind { Whole, Real, Bool, Text };

struct FlagSpec {
    std::string_view flag; // without the dashes
    Kind kind;
    std::string_view knob; // empty: a setting only
};

Kind kindOf(KnobType type)
{
    switch (type) {
    case KnobType::Double: return Kind::Real;
    case KnobType::Bool: return Kind::Bool;
    case KnobType::Text: return Kind::Text;
    default: return Kind::Whole;
    }
}

// The flags that bear on batching, from the knob table: the server's rows
// that have a launch flag (read into the BatchPilot knob the row stands
// for, Knob::ours), then its settings-only flags (serverSettingFlags);
// every other flag is kept as a setting.
std::vector<FlagSpec> flagSpecs(ServerKind server)
{
    std::vector<FlagSpec> out;
    for (const Knob &k : serverKnobs(server))
        if (!k.flag.empty())
            out.push_back({k.flag, kindOf(k.type), k.ours});
    for (const ServerFlag &f : serverSettingFlags(server))
        out.push_back({f.flag, kindOf(f.type), {}});
    return out;
}

} // namespace

Result<ImportedConfig> importCommandLine(std::string_view text, ServerFormat format)
{
    auto words = shellWords(text);
    if (!words)
        return words.status();
    const bool vllm = format == ServerFormat::Vllm;
    const std::vector<FlagSpec> specs = flagSpecs(vllm ? ServerKind::Vllm : ServerKind::Tgi);
    const std::string program = vllm ? "vllm serve" : "text-generation-launcher";
    ImportBuilder b(format);
    b.knob("policy", double(int(PolicyKind::Continuous)), 0,
           program + " batches at the iteration level (policy continuous)");
    bool sawProgram = false, sawFlag = false;
    std::map<std::string, int> lines; // setting -> line, for the derived knobs below
    const std::vector<Word> &w = *words;
    for (std::size_t i = 0; i < w.size(); ++i) {
        const std::string &t = w[i].text;
        if (t == "vllm" || t.find("vllm.entrypoints") != std::string::npos || t == "text-generation-launcher")
            sawProgram = true;
        if (t.rfind("--", 0) != 0 || t.size() == 2)
            continue;
        sawFlag = true;
        std::string name = t.substr(2), value;
        bool hasValue = false;
        if (const auto eq = name.find('='); eq != std::string::npos) {
            value = name.substr(eq + 1);
            name.resize(eq);
            hasValue = true;
        }
        bool negated = false;
        const FlagSpec *spec = nullptr;
        for (const FlagSpec &f : specs) {
            if (f.flag == name)
                spec = &f;
            else if (f.kind == Kind::Bool && name == "no-" + std::string(f.flag))
                spec = &f, negated = true;
        }
        const bool nextIsValue = i + 1 < w.size() && w[i + 1].text.rfind("--", 0) != 0;
        const int line = w[i].line;
        if (!spec) { // kept, not modelled: its value is the next word unless that is a flag
            if (!hasValue && nextIsValue)
                value = w[++i].text, hasValue = true;
            b.setting(snake(name), hasValue ? settingValue(value) : nlohmann::json(true));
            continue;
        }
        if (spec->kind == Kind::Bool) {
            if (!hasValue && nextIsValue) {
                if (auto v = boolean(w[i + 1].text, 0, ""); v)
                    value = w[++i].text, hasValue = true;
            }
            auto on = hasValue ? boolean(value, line, "--" + name) : Result<bool>(true);
            if (!on)
                return on.status();
            const bool v = negated ? !*on : *on;
            b.setting(snake(spec->flag), v);
            if (!spec->knob.empty())
                b.knob(spec->knob, v ? 1 : 0, line, "--" + name);
            continue;
        }
        if (!hasValue) {
            if (!nextIsValue)
                return Status(StatusCode::InvalidArgument, at(line) + "--" + name + " needs a value");
            value = w[++i].text;
        }
        const std::string setting = snake(spec->flag);
        lines[setting] = line;
        if (spec->kind == Kind::Text) {
            b.setting(setting, value);
            continue;
        }
        if (spec->kind == Kind::Real) {
            auto v = realNumber(value, line, "--" + name);
            if (!v)
                return v.status();
            b.setting(setting, *v);
            continue;
        }
        auto v = wholeNumber(value, line, "--" + name);
        if (!v)
            return v.status();
        b.setting(setting, *v);
        if (!spec->knob.empty())
            b.knob(spec->knob, double(*v), line, "--" + name + " " + value);
    }
    if (!sawProgram && !sawFlag)
        return Status(StatusCode::InvalidArgument, "no `" + program + "` command or flags found");
    // Derived knobs (vLLM): the KV budget from an explicit block count, the
    // prefill chunk from the long-prefill threshold, the join order.
    const nlohmann::json &s = b.settings();
    if (vllm && s.contains("num_gpu_blocks_override")) {
        const long long blocks = s["num_gpu_blocks_override"].get<long long>();
        const long long block = s.value("block_size", 16LL);
        b.knob("continuous.kv_cache_tokens", double(blocks * block), lines["num_gpu_blocks_override"],
               "--num-gpu-blocks-override " + std::to_string(blocks) + " x --block-size " +
                   std::to_string(block));
    }
    if (vllm && s.contains("long_prefill_token_threshold") &&
        s["long_prefill_token_threshold"].get<long long>() > 0)
        b.knob("continuous.prefill_chunk", double(s["long_prefill_token_threshold"].get<long long>()),
               lines["long_prefill_token_threshold"], "--long-prefill-token-threshold");
    if (vllm && s.contains("scheduling_policy")) {
        const std::string p = s["scheduling_policy"].get<std::string>();
        if (p != "fcfs" && p != "priority")
            return Status(StatusCode::InvalidArgument, at(lines["scheduling_policy"]) +
                                                           "--scheduling-policy is fcfs or priority, not '" +
                                                           p + "'");
        b.knob("continuous.priority_order", p == "priority" ? 1 : 0, lines["scheduling_policy"],
               "--scheduling-policy " + p);
    }
    return b.take();
}

} // namespace bp::import_detail
