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

bool looksLikeLlamaCppCommand(std::string_view text)
{
    const auto f = detectServerFormat(text);
    return f == ServerFormat::LlamaCpp || f == ServerFormat::Ollama;
}

Result<ServerSettings> llamacppSettingsFromCommand(std::string_view text, const std::string &source)
{
    // import-config's reader (config_import.h): the knob table's flags.
    const ServerFormat format = detectServerFormat(text).value_or(ServerFormat::LlamaCpp);
    auto imported = importConfig(text, format == ServerFormat::Ollama ? format : ServerFormat::LlamaCpp);
    if (!imported)
        return imported.status();
    return settingsFromImport(*imported, source);
}

} // namespace bp
