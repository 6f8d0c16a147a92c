// What the knob table (knobs.h) judges and says about a whole config: the
// rules every writer's config passes (validate()), and the config and its
// changes as an operator reads them. In config/, above core/, because they
// read the table; BatchingConfig itself (engine/core/batching_config.h) knows
// no table.
#pragma once

#include "engine/core/batching_config.h"

#include <string>
#include <utility>
#include <vector>

namespace bp {

// OK, or InvalidArgument naming the field, the value and the range
// ("max_batch_size = 5000 is outside [1, 1024]"): every knob of the table,
// then the server model's (validateServerModel()).
Status validate(const BatchingConfig &config);

// A server model's rules: vllm, tgi and sglang run under policy
// `continuous`, triton under a request-level one; the knobs of the model's
// kind within the table's ranges (messages name them by key:
// "server.vllm.max_num_seqs = 0 is outside [1, 65536]").
Status validateServerModel(const BatchingConfig &config);

// The model's knobs under the server's names and their values, in the
// server's order ({"max_num_seqs", "64"}, ...): the table's listed rows of
// the model's kind, those not set (0 = none) left out; empty for BatchPilot.
std::vector<std::pair<std::string, std::string>> serverModelSettings(const ServerModelConfig &model);

// The model's knobs under the server's names, e.g. "vllm max_num_seqs=64
// max_num_batched_tokens=2048 enable_chunked_prefill=true"; empty for
// BatchPilot.
std::string describeServerModel(const ServerModelConfig &model);

// Human-readable difference for config markers and logs, e.g.
// "max_batch_size 16→32, max_queue_delay 5ms→2ms"; a server model's knobs by
// the server's names ("max_num_seqs 16→8"). Empty when equal.
std::string describeChange(const BatchingConfig &before, const BatchingConfig &after);

// One line naming the policy and the knobs that shape it, as session
// summaries and reports show a config: "dynamic max_batch_size=16
// max_queue_delay=5ms", "continuous max_num_seqs=16
// max_num_batched_tokens=256 prefill_chunk=64 kv_cache_tokens=4096"; the
// knobs every policy has (instances, memory_batch_limit, cache, ...) only
// when they are not their defaults. A server model: its own knobs
// (describeServerModel()).
std::string describeConfig(const BatchingConfig &config);

} // namespace bp
