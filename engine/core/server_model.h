// Which server's scheduler a simulation runs (issue 24 §3), and that
// server's own batching knobs, under the server's own names. BatchPilot's
// embedded engine is the default; the others are models of a remote server
// behind the scheduler seam (engine/sched/server_models/), selected by the
// remote calibration's server kind:
//
//   vllm    V1 scheduler: a token budget per step (max_num_batched_tokens),
//           chunked prefill, max_num_seqs, FCFS, KV blocks of block_size
//           tokens and recompute preemption when they run out
//   tgi     the router's batching task: max_batch_total_tokens,
//           max_batch_prefill_tokens, waiting_served_ratio,
//           max_waiting_tokens, max_batch_size, max_concurrent_requests
//   sglang  the scheduler's prefill adder: max_running_requests,
//           chunked_prefill_size, max_prefill_tokens, schedule_policy,
//           schedule_conservativeness, the KV pool (max_total_tokens)
//   triton  the dynamic batcher: max_batch_size and
//           max_queue_delay_microseconds (BatchingConfig's max_batch_size and
//           max_queue_delay) and preferred_batch_size (here)
//
// The iteration-level models (vllm, tgi, sglang) run under policy
// `continuous`; triton under policy `dynamic` (validateServerModel()).
// Qt-free.
#pragma once

#include "status.h"

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bp {

enum class ServerKind { BatchPilot, Vllm, Tgi, Sglang, Triton };
std::string_view serverKindName(ServerKind kind); // "batchpilot", "vllm", ...
// "batchpilot", "vllm", "tgi", "sglang", "triton"; nullopt otherwise.
std::optional<ServerKind> parseServerKind(std::string_view name);

// vLLM V1 (vllm/v1/core/sched/scheduler.py, config/scheduler.py, cache.py).
struct VllmKnobs {
    int maxNumSeqs = 256;              // --max-num-seqs, [1, 65536]
    int maxNumBatchedTokens = 2048;    // --max-num-batched-tokens, [1, 1e6]
    bool enableChunkedPrefill = true;  // --[no-]enable-chunked-prefill
    int longPrefillTokenThreshold = 0; // --long-prefill-token-threshold; 0 = off
    int blockSize = 16;                // --block-size, [1, 1024]
    std::int64_t kvCacheTokens = 0;    // num_gpu_blocks × block_size; 0 = unlimited
    bool operator==(const VllmKnobs &) const = default;
};

// TGI (router/src/main.rs launcher flags; backends/v3/src/backend.rs, queue.rs).
struct TgiKnobs {
    int maxBatchTotalTokens = 16384;  // --max-batch-total-tokens, [1, 1e8]
    int maxBatchPrefillTokens = 4096; // --max-batch-prefill-tokens, [1, 1e7]
    double waitingServedRatio = 0.3;  // --waiting-served-ratio, [0, 100]
    int maxWaitingTokens = 20;        // --max-waiting-tokens, [1, 1e6]
    int maxBatchSize = 0;             // --max-batch-size; 0 = none
    int maxConcurrentRequests = 128;  // --max-concurrent-requests, [1, 1e6]
    bool operator==(const TgiKnobs &) const = default;
};

// SGLang (python/sglang/srt/server_args.py; managers/scheduler.py, schedule_policy.py).
struct SglangKnobs {
    int maxRunningRequests = 256;        // --max-running-requests, [1, 65536]
    int chunkedPrefillSize = 8192;       // --chunked-prefill-size; 0 = no chunking
    int maxPrefillTokens = 16384;        // --max-prefill-tokens, [1, 1e7]
    std::string schedulePolicy = "fcfs"; // --schedule-policy: fcfs, lpm (lpm = fcfs without a prefix cache)
    double scheduleConservativeness = 1; // --schedule-conservativeness, (0, 10]
    std::int64_t maxTotalTokens = 0;     // --max-total-tokens (the KV pool); 0 = unlimited
    bool operator==(const SglangKnobs &) const = default;
};

// Triton's dynamic batcher (model_config.proto DynamicBatching); its
// max_batch_size and max_queue_delay_microseconds are BatchingConfig's.
struct TritonKnobs {
    std::vector<int> preferredBatchSize; // preferred_batch_size: each [1, max_batch_size]
    bool operator==(const TritonKnobs &) const = default;
};

struct ServerModelConfig {
    ServerKind kind = ServerKind::BatchPilot;
    VllmKnobs vllm;
    TgiKnobs tgi;
    SglangKnobs sglang;
    TritonKnobs triton;
    bool operator==(const ServerModelConfig &) const = default;
};

// OK, or InvalidArgument naming the knob (by the server's name), its value
// and range. `continuous`: the config's policy is `continuous`.
Status validateServerModel(const ServerModelConfig &model, bool continuous, int maxBatchSize);

// The model's knobs under the server's names and their values, in the
// server's order ({"max_num_seqs", "64"}, ...); empty for BatchPilot.
std::vector<std::pair<std::string, std::string>> serverModelSettings(const ServerModelConfig &model);

// The model's knobs under the server's names, e.g. "vllm max_num_seqs=64
// max_num_batched_tokens=2048 enable_chunked_prefill=true"; empty for
// BatchPilot.
std::string describeServerModel(const ServerModelConfig &model);

} // namespace bp
