// The batching knobs. One struct, shared by the GUI, REST (`/v1/config`),
// the CLI (`--config FILE.json`) and replay. Every field has a documented
// default; its valid range is its row in the knob table (config/, a layer
// above: knob_table.cpp), whose validate() (config_rules.h) explains the
// first violation. docs/configuration.md lists the table.
#pragma once

#include "clock.h"
#include "server_model.h"
#include "status.h"
#include "step_budget.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bp {

enum class PolicyKind {
    None,       // batch of one: the baseline every gain is measured against
    Static,     // wait for exactly static_batch_size requests, fixed padded length
    Dynamic,    // dispatch at max_batch_size or after max_queue_delay; pad to longest
    Bucketed,   // dynamic per length bucket ("grouped padding"); most overdue bucket first
    Hybrid,     // router: short requests under load -> static layer of several sizes,
                // long or rare ones -> a dynamic layer (docs/optimizations.md)
    Continuous, // iteration-level: a step over running sequences, joins and leaves
                // between steps (generative models with StepModel)
};

// Queue delay from the observed arrival rate: the time the rate needs to
// fill `fill` × max_batch_size requests, clamped to [min_delay, max_delay],
// re-evaluated every `period`. High rate -> short delay, low rate -> long.
struct AdaptiveDelayConfig {
    bool enabled = false;
    Duration minDelay = std::chrono::microseconds(500); // [0, 10 s]
    Duration maxDelay = std::chrono::milliseconds(20);  // [min_delay, 10 s]
    Duration period = std::chrono::milliseconds(500);   // [10 ms, 60 s]
    double fill = 1.0;                                  // (0, 4]
    bool operator==(const AdaptiveDelayConfig &) const = default;
};

// Clipper-style AIMD against a p99 target: every `period`, if the p99 of
// total latency over the period exceeds the target, max_batch_size and
// max_queue_delay are multiplied by `decrease`; otherwise they grow by the
// additive steps. Always within the hard bounds. Each adjustment is a config
// change with origin "slo-controller" and an explaining summary.
struct SloControllerConfig {
    bool enabled = false;
    Duration p99Target = std::chrono::milliseconds(50); // (0, 60 s]
    int minBatch = 1, maxBatch = 128;                   // 1 <= min <= max <= 1024
    Duration minDelay = Duration::zero();               // [0, max_delay]
    Duration maxDelay = std::chrono::milliseconds(50);  // <= 10 s
    Duration period = std::chrono::seconds(2);          // [100 ms, 600 s]
    int batchStep = 2;                                  // [1, 1024]
    Duration delayStep = std::chrono::milliseconds(1);  // [0, 10 s]
    double decrease = 0.5;                              // (0, 1)
    bool operator==(const SloControllerConfig &) const = default;
};

// Hybrid routing (policy `hybrid`). A request of at most max_static_length
// tokens goes to the static layer when the observed rate is at least
// min_static_rate; the layer's size is the largest of static_sizes that the
// current rate fills within max_queue_delay (else the smallest). Everything
// else goes to the dynamic layer. A static queue also leaves after
// static_max_wait so a rate drop cannot strand it.
struct HybridConfig {
    std::vector<int> staticSizes = {8, 16, 32};             // 1..8 sizes, each [1, 1024], increasing
    int maxStaticLength = 128;                              // [1, 65536]
    double minStaticRate = 50;                              // requests/s, [0, 1e7]
    Duration staticMaxWait = std::chrono::milliseconds(50); // [0, 10 s]
    bool operator==(const HybridConfig &) const = default;
};

// LRU response cache keyed by the exact input tokens and max_new_tokens.
struct CacheConfig {
    bool enabled = false;
    int maxEntries = 10000;             // [1, 10'000'000]
    std::int64_t maxBytes = 64LL << 20; // [1 KiB, 16 GiB]
    bool operator==(const CacheConfig &) const = default;
};
// Policy `continuous` (engine/sched/continuous_scheduler.h): the running set, the
// token budget per step, chunked prefill, step order, the KV budget with
// preemption by recompute, and the join order.
struct ContinuousConfig : StepBudget {
    // StepBudget: maxNumSeqs [1, 1024], maxNumBatchedTokens [1, 65536],
    // chunkedPrefill, kvCacheTokens [0, 1e8] (0 = unlimited).
    ContinuousConfig() : StepBudget{16, 512, true, 0} {}
    int prefillChunk = 128;     // tokens per prefill chunk, [1, 65536]
    bool decodeFirst = true;    // decodes take the budget before prefills
    bool priorityOrder = false; // false: FCFS; true: by priority, then arrival
    // At kv_cache_tokens 0, the share of the device's free memory a paged
    // model's KV pool takes when an engine starts on it (vLLM's
    // gpu_memory_utilization, of free rather than total memory), (0, 1].
    double kvMemoryFraction = 0.9;
    bool operator==(const ContinuousConfig &) const = default;
};
// Prefix caching under policy `continuous` (engine/sched/prefix_cache.h):
// a request's leading whole blocks that are cached skip prefill.
struct PrefixCacheConfig {
    bool enabled = false; // off by default, as vLLM before V1: opt in per workload
    int blockTokens = 16; // tokens per cached block, [1, 4096]; a live change drops the cache
    bool operator==(const PrefixCacheConfig &) const = default;
};
// Service-level objectives for goodput (vLLM's benchmark_serving and
// DistServe define it this way): a request is "good" when it completed OK
// and meets every bound that is set. Zero = not set. Policy-independent:
// the engine measures goodput under every policy (snapshot, /metrics, the
// trace store's session summary).
struct GoodputConfig {
    Duration ttft{}; // time to first token, [0, 10 min]
    Duration tpot{}; // time per output token, (last - first) / (n - 1), [0, 10 min]
    Duration e2e{};  // end-to-end latency (arrival -> completion), [0, 10 min]
    bool any() const { return ttft > Duration::zero() || tpot > Duration::zero() || e2e > Duration::zero(); }
    // Whether a request that completed OK with these figures is good.
    // `ttft` zero means no token was generated: a set TTFT bound is then not
    // met (as in the load bench); `tpot` zero (fewer than two tokens) meets
    // any TPOT bound (vLLM counts a one-token answer's TPOT as 0).
    bool met(Duration ttft, Duration tpot, Duration e2e) const;
    bool operator==(const GoodputConfig &) const = default;
};

std::string_view policyName(PolicyKind kind);
std::optional<PolicyKind> parsePolicy(std::string_view name);

struct BatchingConfig {
    PolicyKind policy = PolicyKind::Dynamic;

    // dynamic / bucketed: largest batch, in requests.          range [1, 1024]
    int maxBatchSize = 16;
    // dynamic / bucketed: how long the oldest request may wait for company.
    //                                                          range [0, 10 s]
    Duration maxQueueDelay = std::chrono::milliseconds(5);

    // static: the batch size N the policy waits for.           range [1, 1024]
    int staticBatchSize = 8;
    // static: every batch is padded to this length.            range [1, 65536]
    // Longer requests are rejected at submit under `static`; requests queued
    // before a switch to `static` are padded to their own length instead.
    int staticPaddedLength = 128;
    // static: on shutdown, may a partial batch run (true) or fail (false)?
    bool staticFlushOnDrain = true;

    // bucketed: ascending upper edges (inclusive) of the length buckets.
    // Lengths above the last edge go to an overflow bucket.
    // 1..32 edges, each in [1, 65536], strictly increasing.
    std::vector<int> bucketEdges = {64, 128, 256, 512, 1024};

    // admission queue depth (all buckets together).             range [1, 1'000'000]
    int queueCapacity = 4096;
    // executor threads = model instances running batches.      range [1, 16]
    int instances = 1;

    // Cap on any batch, set by the memory guard after an out-of-memory
    // error (origin "memory-guard"), or by the operator. 0 = none. [0, 1024]
    int memoryBatchLimit = 0;
    // Priorities: a request's effective priority grows by one for every
    // `priority_aging` it has waited, so lower priorities are delayed, never
    // starved. [1 ms, 60 s]
    Duration priorityAging = std::chrono::milliseconds(100);

    AdaptiveDelayConfig adaptiveDelay;
    SloControllerConfig slo;
    HybridConfig hybrid;
    CacheConfig cache;
    ContinuousConfig continuous;
    PrefixCacheConfig prefixCache;
    GoodputConfig goodput;
    // The server whose scheduler runs (engine/core/server_model.h):
    // BatchPilot's own by default; a model of vLLM, TGI, SGLang or Triton
    // when simulating a remote server. Not a knob of /v1/config.
    ServerModelConfig server;

    bool operator==(const BatchingConfig &) const = default;

    // Number of queues the policy keeps: edges+1 for `bucketed`, static
    // sizes + 1 for `hybrid`, else 1.
    int queueCount() const;
    // Queue index for a sequence of `length` tokens under this config
    // (`hybrid` routes in the Batcher, which knows the rate; this returns its
    // dynamic layer).
    int bucketFor(int length) const;
    // "≤64", "65–128", "static-16", "dynamic", "all"
    std::string queueName(int queue) const;
};

// validate(), describeChange() and describeConfig() read the knob table:
// they are in config/config_rules.h, a layer above.

// "250µs", "5ms", "1.5s"
std::string formatDuration(Duration d);

} // namespace bp
