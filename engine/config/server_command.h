// A server model's knobs (engine/core/server_model.h) to and from the
// server's own syntax, by the knob table's rows (each names
// the knob's setting and launch flag: engine/config/knob_table.cpp):
//  - serverModelFromSettings(): the model of a server from its settings as
//    import-config and the settings fetch keep them (the server's names:
//    max_num_seqs, waiting_served_ratio, dynamic_batching.preferred_batch_size,
//    ...), the server's defaults where a setting is missing;
//  - serverLaunchText(): the launch command (vLLM, TGI, SGLang) or the
//    config.pbtxt fields (Triton) that set the model's knobs; import-config
//    reads the vLLM, TGI and Triton forms back to the same values
//    (tests/engine/test_server_tune.cpp).
#pragma once

#include "config_rules.h"
#include "engine/core/batching_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace bp {

// `kvCapacityTokens`: the KV cache the calibration measured or the server
// published (vLLM num_gpu_blocks × block_size, TGI max_batch_total_tokens,
// SGLang max_total_tokens), used where the settings do not say.
// BatchPilot: `base` unchanged. The result passes validate().
BatchingConfig serverConfigFromSettings(ServerKind kind, const nlohmann::json &settings,
                                        std::optional<std::int64_t> kvCapacityTokens,
                                        BatchingConfig base = {});

// "vllm serve MODEL --max-num-seqs 64 ...", "text-generation-launcher
// --model-id MODEL ...", "python -m sglang.launch_server --model-path MODEL
// ...", or Triton's config.pbtxt fields. Empty for BatchPilot.
std::string serverLaunchText(const BatchingConfig &config, const std::string &model);

} // namespace bp
