// Which server's scheduler a simulation runs, and that
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
//   llamacpp  llama-server's slot loop: n_parallel slots, one llama_decode
//           per turn of every generating slot's token and prompt chunks up
//           to n_batch, a deferred queue, a context per slot
//   triton  the dynamic batcher: max_batch_size and
//           max_queue_delay_microseconds (BatchingConfig's max_batch_size and
//           max_queue_delay) and preferred_batch_size (here)
//
// The iteration-level models (vllm, tgi, sglang, llamacpp) run under policy
// `continuous`; triton under policy `dynamic` (validateServerModel() in
// config/config_rules.h, a layer above).
// Qt-free.
#pragma once

#include "status.h"
#include "step_budget.h"

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bp {

enum class ServerKind { BatchPilot, Vllm, Tgi, Sglang, Triton, LlamaCpp };
std::string_view serverKindName(ServerKind kind); // "batchpilot", "vllm", ..., "llamacpp"
// "batchpilot", "vllm", "tgi", "sglang", "triton", "llamacpp"; nullopt otherwise.
std::optional<ServerKind> parseServerKind(std::string_view name);

// The defaults are the servers' own. Each field's name in the server's
// settings, launch flag, range and doc are its row in the knob table
// (config/knob_table.cpp: server.vllm.max_num_seqs, ...).

// vLLM V1 (vllm/v1/core/sched/scheduler.py, config/scheduler.py, cache.py).
struct VllmKnobs : StepBudget {
    // StepBudget: max_num_seqs, max_num_batched_tokens,
    // enable_chunked_prefill, and the KV cache as num_gpu_blocks × block_size.
    VllmKnobs() : StepBudget{256, 2048, true, 0} {}
    int longPrefillTokenThreshold = 0; // 0 = off
    int blockSize = 16;
    bool operator==(const VllmKnobs &) const = default;
};

// TGI (router/src/main.rs launcher flags; backends/v3/src/backend.rs, queue.rs).
struct TgiKnobs {
    int maxBatchTotalTokens = 16384;
    int maxBatchPrefillTokens = 4096;
    double waitingServedRatio = 0.3;
    int maxWaitingTokens = 20;
    int maxBatchSize = 0; // 0 = none
    int maxConcurrentRequests = 128;
    bool operator==(const TgiKnobs &) const = default;
};

// SGLang (python/sglang/srt/server_args.py; managers/scheduler.py, schedule_policy.py).
struct SglangKnobs {
    int maxRunningRequests = 256;
    int chunkedPrefillSize = 8192; // 0 = no chunking
    int maxPrefillTokens = 16384;
    std::string schedulePolicy = "fcfs"; // fcfs, lpm (lpm = fcfs without a prefix cache)
    double scheduleConservativeness = 1;
    std::int64_t maxTotalTokens = 0; // the KV pool; 0 = unlimited
    bool operator==(const SglangKnobs &) const = default;
};

// Triton's dynamic batcher (model_config.proto DynamicBatching); its
// max_batch_size and max_queue_delay_microseconds are BatchingConfig's.
struct TritonKnobs {
    std::vector<int> preferredBatchSize;
    bool operator==(const TritonKnobs &) const = default;
};

// llama.cpp's llama-server (common/common.h common_params; tools/server/
// server.cpp, server-context.cpp). Its defaults, except n_ctx: the server's
// 0 means "the model's training context", which a model of it cannot know,
// so 4096 stands in (the settings read from /props replace it).
struct LlamaCppKnobs {
    int nParallel = 4;     // slots (-np; the server's auto is 4 with a unified KV cache)
    int nCtx = 4096;       // KV cache of all slots (-c)
    int nBatch = 2048;     // tokens of one llama_decode call (-b)
    int nUbatch = 512;     // tokens of one compute pass inside it (-ub)
    bool kvUnified = true; // one KV cache the slots share (-kvu); else n_ctx / n_parallel each
    int nCacheReuse = 0;   // --cache-reuse: chunk size for KV shifting reuse; 0 = off
    bool operator==(const LlamaCppKnobs &) const = default;
};

struct ServerModelConfig {
    ServerKind kind = ServerKind::BatchPilot;
    VllmKnobs vllm;
    TgiKnobs tgi;
    SglangKnobs sglang;
    TritonKnobs triton;
    LlamaCppKnobs llamacpp;
    bool operator==(const ServerModelConfig &) const = default;
};

// Their ranges, docs, settings names and launch flags are rows of the knob
// table (config/knob_table.cpp); validateServerModel(),
// serverModelSettings() and describeServerModel() read them
// (config/config_rules.h).

} // namespace bp
