#include "engine/sim/calibration/llamacpp_settings.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace bp {

namespace {

std::optional<std::int64_t> whole(const nlohmann::json &j, const char *key)
{
    if (!j.is_object() || !j.contains(key) || !j[key].is_number())
        return std::nullopt;
    return static_cast<std::int64_t>(std::llround(j[key].get<double>()));
}

} // namespace

bool isLlamaCppProps(const nlohmann::json &props)
{
    return props.is_object() && props.contains("total_slots") && props["total_slots"].is_number() &&
           props.contains("default_generation_settings") && props["default_generation_settings"].is_object();
}

Result<ServerSettings> llamacppSettings(const nlohmann::json &props, const nlohmann::json *slots)
{
    if (!isLlamaCppProps(props))
        return Status(StatusCode::InvalidArgument,
                      "not llama-server's /props (no total_slots and default_generation_settings)");
    ServerSettings s;
    s.server = "llamacpp";
    s.source = "GET /props";
    const std::int64_t total = std::max<std::int64_t>(1, *whole(props, "total_slots"));
    std::optional<std::int64_t> slotCtx = whole(props["default_generation_settings"], "n_ctx");
    if (slots && slots->is_array() && !slots->empty()) {
        // Every slot has the same context; /slots confirms the count.
        std::int64_t n = 0;
        for (const auto &slot : *slots)
            if (slot.is_object() && slot.contains("id")) {
                ++n;
                if (!slotCtx)
                    slotCtx = whole(slot, "n_ctx");
            }
        if (n > 0 && n != total)
            s.notes.push_back("/props says " + std::to_string(total) + " slots, /slots lists " +
                              std::to_string(n) + ": " + std::to_string(total) + " taken");
        s.source += " + GET /slots";
    }
    for (const char *key : {"build_info", "model_path", "model_alias"})
        if (props.contains(key) && props[key].is_string())
            s.settings[key] = props[key];
    s.settings["n_parallel"] = total;
    s.settings["total_slots"] = total;
    if (slotCtx && *slotCtx > 0) {
        s.settings["slot_n_ctx"] = *slotCtx;
        s.settings["n_ctx"] = *slotCtx * total;
        s.settings["kv_unified"] = false;
        s.maxModelLen = *slotCtx;
        s.kvCapacityTokens = *slotCtx * total;
    }
    setServerKnob(s, "policy", double(int(PolicyKind::Continuous)));
    setServerKnob(s, "continuous.max_num_seqs", double(total));
    s.notes.push_back("llama-server does not publish n_batch, n_ubatch, --cache-reuse or -kvu: the defaults "
                      "(2048, 512, 0) stand and each slot is modelled with its own context; give "
                      "--server-config with the server's flags if they differ");
    return s;
}

} // namespace bp

namespace bp {

namespace {

std::vector<std::string> words(std::string_view text)
{
    std::vector<std::string> out;
    std::string w;
    for (char c : text) {
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\\' || c == '"' || c == '\'') {
            if (!w.empty())
                out.push_back(std::move(w));
            w.clear();
            continue;
        }
        w += c;
    }
    if (!w.empty())
        out.push_back(std::move(w));
    return out;
}

struct Flag {
    const char *shortName; // "-np"
    const char *longName;  // "--parallel"
    const char *setting;   // "n_parallel"
};

constexpr Flag kFlags[] = {
    {"-np", "--parallel", "n_parallel"},         {"-c", "--ctx-size", "n_ctx"},
    {"-b", "--batch-size", "n_batch"},           {"-ub", "--ubatch-size", "n_ubatch"},
    {nullptr, "--cache-reuse", "n_cache_reuse"},
};

Result<std::int64_t> wholeValue(const std::string &flag, const std::string &value)
{
    char *end = nullptr;
    const long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || !end || *end != '\0' || v < 0)
        return Status(StatusCode::InvalidArgument, flag + " takes a whole number, not '" + value + "'");
    return std::int64_t(v);
}

} // namespace

bool looksLikeLlamaCppCommand(std::string_view text)
{
    return text.find("llama-server") != std::string_view::npos ||
           text.find("OLLAMA_NUM_PARALLEL") != std::string_view::npos ||
           text.find("OLLAMA_CONTEXT_LENGTH") != std::string_view::npos ||
           text.find("OLLAMA_MAX_QUEUE") != std::string_view::npos;
}

Result<ServerSettings> llamacppSettingsFromCommand(std::string_view text, const std::string &source)
{
    ServerSettings s;
    s.server = "llamacpp";
    s.source = source;
    std::optional<std::int64_t> ollamaContext;
    const std::vector<std::string> w = words(text);
    for (std::size_t i = 0; i < w.size(); ++i) {
        const std::string &t = w[i];
        if (const auto eq = t.find('='); t.rfind("OLLAMA_", 0) == 0 && eq != std::string::npos) {
            const std::string name = t.substr(0, eq);
            auto v = wholeValue(name, t.substr(eq + 1));
            if (!v)
                return v.status();
            if (name == "OLLAMA_NUM_PARALLEL")
                s.settings["n_parallel"] = *v;
            else if (name == "OLLAMA_CONTEXT_LENGTH")
                ollamaContext = *v;
            s.settings[name] = *v;
            continue;
        }
        if (t == "-kvu" || t == "--kv-unified" || t == "-no-kvu" || t == "--no-kv-unified") {
            s.settings["kv_unified"] = t.find("no") == std::string::npos;
            continue;
        }
        const Flag *flag = nullptr;
        for (const Flag &f : kFlags)
            if ((f.shortName && t == f.shortName) || t == f.longName)
                flag = &f;
        if (!flag)
            continue;
        if (i + 1 >= w.size())
            return Status(StatusCode::InvalidArgument, t + " needs a value");
        auto v = wholeValue(t, w[++i]);
        if (!v)
            return v.status();
        s.settings[flag->setting] = *v;
    }
    if (s.settings.empty())
        return Status(StatusCode::InvalidArgument, "no llama-server flags or OLLAMA_ variables found");
    const std::int64_t slots = s.settings.value("n_parallel", std::int64_t(4));
    if (ollamaContext) {
        // Ollama allocates OLLAMA_CONTEXT_LENGTH per parallel request.
        s.settings["n_ctx"] = *ollamaContext * slots;
        s.settings["kv_unified"] = false;
        s.notes.push_back("Ollama: n_ctx = OLLAMA_CONTEXT_LENGTH x OLLAMA_NUM_PARALLEL; Ollama's own runner "
                          "schedules like llama-server's slots, modelled so");
    }
    if (s.settings.contains("n_ctx")) {
        const std::int64_t ctx = s.settings["n_ctx"].get<std::int64_t>();
        s.kvCapacityTokens = ctx;
        s.maxModelLen = s.settings.value("kv_unified", false) ? ctx : ctx / std::max<std::int64_t>(1, slots);
    }
    setServerKnob(s, "policy", double(int(PolicyKind::Continuous)));
    setServerKnob(s, "continuous.max_num_seqs", double(slots));
    return s;
}

} // namespace bp
