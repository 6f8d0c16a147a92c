#include "engine/sim/calibration/remote_settings.h"

#include "engine/config/server_command.h"

#include "engine/config/config_json.h"
#include "engine/config/knobs.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace bp {

namespace {

std::string text(const nlohmann::json &v)
{
    return v.is_string() ? v.get<std::string>() : v.dump();
}

// A label value as a whole number ("27427"); nullopt for "None", "".
std::optional<std::int64_t> labelNumber(const std::string &s)
{
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
        return std::nullopt;
    return v;
}

std::optional<std::int64_t> jsonWhole(const nlohmann::json &j, const char *key)
{
    if (!j.contains(key) || !j[key].is_number())
        return std::nullopt;
    return static_cast<std::int64_t>(std::llround(j[key].get<double>()));
}

// The model entry of a /v1/models list: `model`'s, else the first.
const nlohmann::json *modelEntry(const nlohmann::json *models, const std::string &model)
{
    if (!models || !models->is_object() || !models->contains("data") || !(*models)["data"].is_array() ||
        (*models)["data"].empty())
        return nullptr;
    for (const auto &m : (*models)["data"])
        if (m.is_object() && m.value("id", std::string()) == model)
            return &m;
    return &(*models)["data"][0];
}

} // namespace

void setServerKnob(ServerSettings &s, const char *key, double value)
{
    const Knob *k = findKnob(key);
    BatchingConfig c;
    if (!k)
        return;
    k->set(c, value);
    if (Status st = checkKnob(*k, c); !st) {
        s.notes.push_back(st.message() + "; " + key + " not set");
        return;
    }
    s.knobs.update(knobValues(c, {key}));
}

std::string ServerSettings::summary(std::size_t maxItems) const
{
    std::string out;
    std::size_t n = 0;
    auto add = [&](const std::string &k, const nlohmann::json &v) {
        if (n++ >= maxItems)
            return;
        out += (out.empty() ? "" : ", ") + k + "=" + text(v);
    };
    // The knobs that shape a server's batches first, then the rest.
    static const char *const kFirst[] = {"policy",
                                         "max_batch_size",
                                         "max_queue_delay_us",
                                         "continuous.max_num_seqs",
                                         "continuous.max_num_batched_tokens",
                                         "continuous.chunked_prefill",
                                         "continuous.prefill_chunk",
                                         "continuous.kv_cache_tokens"};
    for (const char *k : kFirst)
        if (knobs.contains(k))
            add(k, knobs[k]);
    for (const auto &[k, v] : knobs.items())
        if (std::find(std::begin(kFirst), std::end(kFirst), k) == std::end(kFirst))
            add(k, v);
    if (maxModelLen)
        add("max_model_len", *maxModelLen);
    if (kvCapacityTokens)
        add("kv_capacity_tokens", *kvCapacityTokens);
    for (const auto &[k, v] : settings.items())
        if (!knobs.contains(k) && k != "max_model_len")
            add(k, v);
    if (n > maxItems)
        out += ", ... (" + std::to_string(n - maxItems) + " more)";
    return out;
}

nlohmann::json toJson(const ServerSettings &s)
{
    nlohmann::json j = {{"server", s.server},
                        {"source", s.source},
                        {"settings", s.settings},
                        {"knobs", s.knobs},
                        {"notes", s.notes}};
    if (s.maxModelLen)
        j["max_model_len"] = *s.maxModelLen;
    if (s.kvCapacityTokens)
        j["kv_capacity_tokens"] = *s.kvCapacityTokens;
    return j;
}

Result<ServerSettings> serverSettingsFromJson(const nlohmann::json &j)
{
    if (!j.is_object())
        return Status(StatusCode::InvalidArgument, "server settings must be an object");
    try {
        ServerSettings s;
        s.server = j.value("server", std::string());
        s.source = j.value("source", std::string());
        s.settings = j.value("settings", nlohmann::json::object());
        s.knobs = j.value("knobs", nlohmann::json::object());
        s.notes = j.value("notes", std::vector<std::string>{});
        if (j.contains("max_model_len"))
            s.maxModelLen = j["max_model_len"].get<std::int64_t>();
        if (j.contains("kv_capacity_tokens"))
            s.kvCapacityTokens = j["kv_capacity_tokens"].get<std::int64_t>();
        if (auto c = applyKnobValues(s.knobs); !c)
            return Status(StatusCode::InvalidArgument, "server settings: " + c.status().message());
        return s;
    } catch (const nlohmann::json::exception &e) {
        return Status(StatusCode::InvalidArgument, std::string("server settings: ") + e.what());
    }
}

ServerSettings settingsFromImport(const ImportedConfig &imported, const std::string &source)
{
    ServerSettings s;
    switch (imported.format) {
    case ServerFormat::Triton: s.server = "triton"; break;
    case ServerFormat::Vllm: s.server = "vllm"; break;
    case ServerFormat::Tgi: s.server = "tgi"; break;
    case ServerFormat::TorchServe: s.server = "torchserve"; break;
    case ServerFormat::RayServe: s.server = "ray-serve"; break;
    case ServerFormat::LlamaCpp:
    case ServerFormat::Ollama: s.server = "llamacpp"; break;
    }
    s.source = source;
    s.settings = imported.settings;
    s.knobs = knobValues(imported.config, imported.knobs);
    s.notes = imported.notes;
    for (const char *key : {"max_model_len", "max_total_tokens"})
        if (auto v = jsonWhole(imported.settings, key))
            s.maxModelLen = *v;
    if (imported.config.continuous.kvCacheTokens > 0 && s.knobs.contains("continuous.kv_cache_tokens"))
        s.kvCapacityTokens = imported.config.continuous.kvCacheTokens;
    if (s.server == "llamacpp" && s.knobs.contains("server.llamacpp.n_ctx")) {
        // A slot's context: n_ctx, or n_ctx / n_parallel without a unified cache.
        const LlamaCppKnobs &k = imported.config.server.llamacpp;
        s.kvCapacityTokens = k.nCtx;
        s.maxModelLen = k.kvUnified ? k.nCtx : k.nCtx / std::max(1, k.nParallel);
    }
    return s;
}

Result<ServerSettings> vllmSettings(const prom::Exposition &metrics, const nlohmann::json *models,
                                    const std::string &model)
{
    ServerSettings s;
    s.server = "vllm";
    std::vector<std::string> from;
    std::int64_t kvTokens = 0;
    bool anyKv = false;
    int engines = 0;
    for (const prom::Sample &sample : metrics.samples) {
        if (sample.name != "vllm:cache_config_info")
            continue;
        ++engines;
        for (const auto &[k, v] : sample.labels)
            if (v != "None" && k != "engine" && k != "model_name")
                s.settings[k] = settingFromText(v);
        // kv_cache_size_tokens (newer vLLM) is group-aware; else blocks x block size.
        const auto label = [&](const char *k) {
            const auto it = sample.labels.find(k);
            return it == sample.labels.end() ? std::optional<std::int64_t>() : labelNumber(it->second);
        };
        if (auto t = label("kv_cache_size_tokens")) {
            kvTokens += *t;
            anyKv = true;
        } else if (auto blocks = label("num_gpu_blocks"); blocks && label("block_size")) {
            kvTokens += *blocks * *label("block_size");
            anyKv = true;
        }
    }
    if (engines > 0)
        from.push_back("/metrics vllm:cache_config_info");
    if (anyKv && kvTokens > 0) {
        s.kvCapacityTokens = kvTokens;
        if (engines > 1)
            s.notes.push_back("KV capacity summed over " + std::to_string(engines) + " engines");
        setServerKnob(s, "continuous.kv_cache_tokens", double(kvTokens));
    }
    if (const nlohmann::json *m = modelEntry(models, model)) {
        if (auto len = jsonWhole(*m, "max_model_len")) {
            s.maxModelLen = *len;
            s.settings["max_model_len"] = *len;
        }
        from.push_back("GET /v1/models");
    }
    if (from.empty())
        return Status(StatusCode::InvalidArgument,
                      "no vllm:cache_config_info in /metrics and no model in /v1/models");
    s.source = from.size() == 2 ? from[0] + " + " + from[1] : from[0];
    s.notes.push_back("vLLM does not publish --max-num-seqs or --max-num-batched-tokens: the probe's limits "
                      "show them, or give --server-config");
    return s;
}

Result<ServerSettings> tgiSettings(const nlohmann::json &info, const prom::Exposition *metrics)
{
    if (!info.is_object() || !info.contains("max_total_tokens"))
        return Status(StatusCode::InvalidArgument, "not TGI's /info (no max_total_tokens)");
    ServerSettings s;
    s.server = "tgi";
    s.source = "GET /info";
    for (const char *key :
         {"model_id", "version", "max_concurrent_requests", "max_input_tokens", "max_input_length",
          "max_total_tokens", "waiting_served_ratio", "max_batch_total_tokens", "max_waiting_tokens",
          "max_batch_size", "max_client_batch_size", "max_best_of"})
        if (info.contains(key) && !info[key].is_null())
            s.settings[key] = info[key];
    setServerKnob(s, "policy", double(int(PolicyKind::Continuous)));
    s.maxModelLen = jsonWhole(info, "max_total_tokens");
    if (auto v = jsonWhole(info, "max_concurrent_requests"))
        setServerKnob(s, "queue_capacity", double(*v));
    if (auto v = jsonWhole(info, "max_batch_size"))
        setServerKnob(s, "continuous.max_num_seqs", double(*v));
    std::optional<std::int64_t> total = jsonWhole(info, "max_batch_total_tokens");
    if (!total && metrics)
        if (auto g = metrics->sum("tgi_batch_max_total_tokens"); g && *g > 0) {
            total = static_cast<std::int64_t>(*g);
            s.settings["max_batch_total_tokens"] = *total;
            s.source += " + /metrics tgi_batch_max_total_tokens";
        }
    if (total) {
        s.kvCapacityTokens = *total;
        setServerKnob(s, "continuous.kv_cache_tokens", double(*total));
    }
    if (!info.contains("max_batch_total_tokens"))
        s.notes.push_back("TGI 2.3+ no longer lists --max-batch-prefill-tokens, --waiting-served-ratio or "
                          "--max-waiting-tokens in /info: give --server-config for them");
    return s;
}

Result<ServerSettings> sglangSettings(const nlohmann::json &info, const nlohmann::json *models,
                                      const std::string &model, const std::string &route)
{
    if (!info.is_object() ||
        !(info.contains("max_total_num_tokens") || info.contains("max_running_requests") ||
          info.contains("chunked_prefill_size")))
        return Status(StatusCode::InvalidArgument, "not SGLang's server info (no max_total_num_tokens, "
                                                   "max_running_requests or chunked_prefill_size)");
    // A value at the top level, else in the first internal state (a
    // scheduler's own values; null at the top level means "not given").
    const nlohmann::json *internal = nullptr;
    if (const auto it = info.find("internal_states");
        it != info.end() && it->is_array() && !it->empty() && (*it)[0].is_object())
        internal = &(*it)[0];
    const auto value = [&](const char *key) -> const nlohmann::json * {
        for (const nlohmann::json *j : {&info, internal})
            if (j && j->contains(key) && !(*j)[key].is_null())
                return &(*j)[key];
        return nullptr;
    };
    const auto whole = [&](const char *key) -> std::optional<std::int64_t> {
        const nlohmann::json *v = value(key);
        if (!v || !v->is_number())
            return std::nullopt;
        return static_cast<std::int64_t>(std::llround(v->get<double>()));
    };
    ServerSettings s;
    s.server = "sglang";
    s.source = "GET " + route;
    for (const char *key : {"version", "max_running_requests", "chunked_prefill_size", "max_prefill_tokens",
                            "schedule_policy", "schedule_conservativeness", "context_length", "page_size",
                            "max_req_input_len", "enable_mixed_chunk", "disable_radix_cache"})
        if (const nlohmann::json *v = value(key); v && (v->is_number() || v->is_string() || v->is_boolean()))
            s.settings[key] = *v;
    setServerKnob(s, "policy", double(int(PolicyKind::Continuous)));
    if (auto v = whole("max_running_requests"); v && *v > 0)
        setServerKnob(s, "continuous.max_num_seqs", double(*v));
    else
        s.notes.push_back("SGLang published no max_running_requests: the probe's limits show it");
    if (auto chunk = whole("chunked_prefill_size")) {
        setServerKnob(s, "continuous.chunked_prefill", *chunk > 0 ? 1.0 : 0.0); // -1: chunking off
        if (*chunk > 0)
            setServerKnob(s, "continuous.prefill_chunk", double(*chunk));
    }
    if (auto v = whole("max_prefill_tokens"); v && *v > 0)
        setServerKnob(s, "continuous.max_num_batched_tokens", double(*v));
    // The KV pool: the scheduler's max_total_num_tokens; the server arg
    // max_total_tokens is only what the operator asked for (null if not).
    std::optional<std::int64_t> pool = whole("max_total_num_tokens");
    if (!pool || *pool <= 0)
        pool = whole("max_total_tokens");
    if (pool && *pool > 0) {
        s.settings["max_total_tokens"] = *pool;
        s.kvCapacityTokens = *pool;
        setServerKnob(s, "continuous.kv_cache_tokens", double(*pool));
    }
    if (auto len = whole("context_length"); len && *len > 0) {
        s.maxModelLen = *len;
    } else if (const nlohmann::json *m = modelEntry(models, model)) {
        if (auto l = jsonWhole(*m, "max_model_len")) {
            s.maxModelLen = *l;
            s.settings["max_model_len"] = *l;
            s.source += " + GET /v1/models";
        }
    }
    return s;
}

Result<ServerSettings> tritonSettings(const nlohmann::json &modelConfig)
{
    auto imported = tritonFromJson(modelConfig);
    if (!imported)
        return imported.status();
    return settingsFromImport(*imported, "GET /v2/models/NAME/config");
}

Result<ServerSettings> batchpilotSettings(const nlohmann::json &config, const nlohmann::json *models)
{
    auto c = configFromJson(config);
    if (!c)
        return Status(c.status().code(), "GET /v1/config: " + c.status().message());
    ServerSettings s;
    s.server = "batchpilot";
    s.source = "GET /v1/config";
    s.settings = config;
    std::vector<std::string> keys;
    for (const Knob &k : knobs())
        keys.emplace_back(k.key);
    s.knobs = knobValues(*c, keys);
    if (c->continuous.kvCacheTokens > 0)
        s.kvCapacityTokens = c->continuous.kvCacheTokens;
    if (const nlohmann::json *m = modelEntry(models, "")) {
        // BatchPilot's max_model_len is the longest prompt; a prompt and
        // its output share the decoder's positions, one more.
        if (auto len = jsonWhole(*m, "max_model_len"))
            s.maxModelLen = *len;
        s.source += " + GET /v1/models";
    }
    return s;
}

Result<BatchingConfig> serverCurrentConfig(const std::string &server, const ServerSettings &settings,
                                           std::optional<double> kvCapacityTokens)
{
    const std::optional<ServerKind> kind = parseServerKind(server);
    if (!kind || *kind == ServerKind::BatchPilot)
        return applyKnobValues(settings.knobs);
    std::optional<std::int64_t> kv = settings.kvCapacityTokens;
    if (!kv && kvCapacityTokens && *kvCapacityTokens > 0)
        kv = std::int64_t(*kvCapacityTokens);
    BatchingConfig c = serverConfigFromSettings(*kind, settings.settings, kv);
    if (Status s = validate(c); !s)
        return Status(s.code(), server + "'s settings as read: " + s.message());
    return c;
}

} // namespace bp
