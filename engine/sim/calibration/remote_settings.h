// A remote server's current settings, read where the server publishes them
// or from the operator's file (import-config), stored with its calibration.
//
//   vLLM        /metrics `vllm:cache_config_info` (an info gauge whose labels
//               are CacheConfig's fields: block_size, num_gpu_blocks,
//               kv_cache_size_tokens, gpu_memory_utilization, ...; vllm
//               v1/metrics/loggers.py, config/cache.py metrics_info) and
//               /v1/models `max_model_len` (entrypoints/openai protocol.py
//               ModelCard)
//   TGI         GET /info (router/src/lib.rs `Info`: max_concurrent_requests,
//               max_input_tokens, max_total_tokens, and up to 2.2
//               waiting_served_ratio, max_batch_total_tokens,
//               max_waiting_tokens, max_batch_size) and the gauge
//               `tgi_batch_max_total_tokens` (backends/v3/src/lib.rs)
//   SGLang      GET /get_server_info (or /server_info; http_server.py: the
//               server args max_running_requests, chunked_prefill_size,
//               max_prefill_tokens, schedule_policy,
//               schedule_conservativeness, context_length, and the
//               scheduler's max_total_num_tokens, the KV pool; a value null
//               at the top level is taken from the first `internal_states`
//               entry, where newer releases keep the scheduler's own) and
//               /v1/models `max_model_len`
//   Triton      GET /v2/models/NAME/config (config_import.h: tritonFromJson)
//   BatchPilot  GET /v1/config (every knob) and /v1/models `max_model_len`
//   llama.cpp   GET /props and GET /slots (llamacpp_settings.h)
//
// `settings` keeps what was read under the server's own names; `knobs`
// holds the BatchPilot knobs they set (import-config's mapping), so a
// simulation can start from the server's current configuration.
#pragma once

#include "engine/config/config_import.h"
#include "engine/core/result.h"
#include "engine/telemetry/prometheus_text.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bp {

struct ServerSettings {
    std::string server; // "vllm", "tgi", "sglang", "triton", "batchpilot"; empty: not read
    std::string source; // where: "GET /v1/config", "file vllm.sh", ...
    nlohmann::json settings = nlohmann::json::object(); // the server's names -> values
    nlohmann::json knobs = nlohmann::json::object();    // BatchPilot knob -> value (knobValues)
    std::vector<std::string> notes;
    std::optional<std::int64_t> maxModelLen;      // prompt + output tokens at most
    std::optional<std::int64_t> kvCapacityTokens; // KV cache, tokens

    bool empty() const { return settings.empty() && knobs.empty(); }
    // "max_num_seqs=256, max_model_len=8192, ..." (knobs first, then the rest).
    std::string summary(std::size_t maxItems = 12) const;
    bool operator==(const ServerSettings &) const = default;
};

nlohmann::json toJson(const ServerSettings &s);
Result<ServerSettings> serverSettingsFromJson(const nlohmann::json &j);

// The config that simulates `server` (its kind's name) as `settings` set
// it: for vLLM, TGI, SGLang and Triton their scheduler model with the
// server's knobs (engine/config/server_command.h; the KV capacity the
// settings or `kvCapacityTokens`, the calibration's measure, give); for
// BatchPilot (or an unknown kind) the knobs it published. InvalidArgument
// when the settings do not make a valid config.
Result<BatchingConfig> serverCurrentConfig(const std::string &server, const ServerSettings &settings,
                                           std::optional<double> kvCapacityTokens);

// Sets BatchPilot knob `key` in `s.knobs`; a value out of its range is a
// note instead.
void setServerKnob(ServerSettings &s, const char *key, double value);

// From import-config's reading of a file.
ServerSettings settingsFromImport(const ImportedConfig &imported, const std::string &source);

// vLLM: the `vllm:cache_config_info` series of a scrape (summed over
// engines) and, when given, GET /v1/models (the entry for `model`, else the
// first). InvalidArgument when neither carries anything.
Result<ServerSettings> vllmSettings(const prom::Exposition &metrics, const nlohmann::json *models,
                                    const std::string &model);
// TGI: GET /info, and the scrape when given (tgi_batch_max_total_tokens).
Result<ServerSettings> tgiSettings(const nlohmann::json &info, const prom::Exposition *metrics);
// SGLang: GET /get_server_info (`route`: where it was read), and GET
// /v1/models when given (the entry for `model`, else the first). Only the
// scheduler's settings are kept (the answer also lists every server arg,
// api_key included). The KV pool, max_total_num_tokens there, is kept as
// max_total_tokens, the name serverConfigFromSettings reads. InvalidArgument
// when it is not SGLang's server info.
Result<ServerSettings> sglangSettings(const nlohmann::json &serverInfo, const nlohmann::json *models,
                                      const std::string &model,
                                      const std::string &route = "/get_server_info");
// Triton: GET /v2/models/NAME/config.
Result<ServerSettings> tritonSettings(const nlohmann::json &modelConfig);
// BatchPilot: GET /v1/config, and GET /v1/models when given.
Result<ServerSettings> batchpilotSettings(const nlohmann::json &config, const nlohmann::json *models);

} // namespace bp
