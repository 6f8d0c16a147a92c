// JSON forms of the config and the snapshot: the one wire format shared by
// REST (/v1/config, /v1/stats), `--config FILE.json`, bench --json and reports.
//
// Config fields (all optional on input; absent ones keep the base value):
//   policy                 "none" | "static" | "dynamic" | "bucketed" | "hybrid"
//   max_batch_size         integer
//   max_queue_delay_us     integer microseconds
//   static_batch_size      integer
//   static_padded_length   integer
//   static_flush_on_drain  boolean
//   bucket_edges           array of integers
//   queue_capacity         integer
//   instances              integer
//   memory_batch_limit, priority_aging_us, and the objects adaptive_delay,
//   slo, hybrid, cache (docs/configuration.md)
//   server                 a simulated server's scheduler model, under the
//                          server's own names: {"kind": "vllm", "max_num_seqs":
//                          16, ...} (engine/core/server_model.h; the names and
//                          types are the knob table's rows of that kind,
//                          docs/configuration.md); written only when the kind
//                          is not BatchPilot; not a live knob (patchFromJson
//                          refuses it)
// Unknown fields and wrong types are errors naming the field.
#pragma once

#include "config_patch.h"
#include "engine/core/batching_config.h"
#include "engine/core/result.h"

#include <nlohmann/json.hpp>
#include <string>

namespace bp {

nlohmann::json toJson(const BatchingConfig &config);
// Applies the fields of `json` on top of `base`, then validates the result.
Result<BatchingConfig> configFromJson(const nlohmann::json &json, const BatchingConfig &base = {});
// The fields present in `json` as a patch (PUT /v1/config): types are
// checked here, the patched config is validated by Engine::update. A nested
// object names only its own fields present ({"slo": {"enabled": true}}
// touches slo.enabled alone).
Result<ConfigPatch> patchFromJson(const nlohmann::json &json);
// Reads and parses a config file (see above); errors name the file.
Result<BatchingConfig> loadConfigFile(const std::string &path, const BatchingConfig &base = {});

} // namespace bp
