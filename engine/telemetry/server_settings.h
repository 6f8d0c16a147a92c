// What a remote server's /metrics tells of its own batching settings, as
// one line for a remote session's `config` row: the session
// summary of a local session shows the engine's last config; a remote one
// shows this, or says that the server's settings are not known.
//
//  - BatchPilot: every knob is a `batchpilot_config_*` gauge (engine/config/knobs.h)
//    and the policy a one-hot `batchpilot_config_policy`; the config is
//    rebuilt from them and described like a local session's
//    ("batchpilot: continuous max_num_seqs=16 ...").
//  - vLLM: the labels of `vllm:cache_config_info` (block_size,
//    num_gpu_blocks, gpu_memory_utilization, ...), sorted by name.
//  - TGI, SGLang, Triton publish no settings in /metrics: empty.
#pragma once

#include "prometheus_text.h"

#include <string>

namespace bp {

// The settings `exposition` publishes, prefixed with the server kind
// ("batchpilot: ...", "vllm: ..."); empty when it publishes none.
std::string scrapedServerSettings(const prom::Exposition &exposition);

// The `config` row of a remote session: "<settings> (scraped)", or, when
// none were scraped, "<server> server's own, not known" (or without the
// server when it was not recognised either).
std::string remoteConfigText(const std::string &scrapedSettings, const std::string &server);

} // namespace bp
