// The knob table: every knob declared once, BatchPilot's and the server
// models' (engine/config/knobs.h says what a declaration holds and who reads
// it). The functions over the table are in knobs.cpp.
#include "knobs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace bp {

namespace {

// Exact (nanoseconds are kept as fractions of a µs), so no range check rounds a value in.
constexpr double us(Duration d)
{
    return double(d.count()) / 1e3;
}
Duration fromUs(double v)
{
    return Duration(std::llround(v * 1e3));
}
constexpr double kMaxBatch = 1024, kMaxLength = 65536, kMaxDelayUs = 10e6, kMaxSloUs = 600e6;
constexpr double kUnbounded = std::numeric_limits<double>::infinity(); // with BoundKind::Exclusive

constexpr PolicyMask kDynamicLike =
    policyBit(PolicyKind::Dynamic) | policyBit(PolicyKind::Bucketed) | policyBit(PolicyKind::Hybrid);
constexpr PolicyMask kStatic = policyBit(PolicyKind::Static);
constexpr PolicyMask kBucketed = policyBit(PolicyKind::Bucketed);
constexpr PolicyMask kHybrid = policyBit(PolicyKind::Hybrid);
constexpr PolicyMask kContinuous = policyBit(PolicyKind::Continuous);

// Accessors for a scalar member path (c.EXPR), one per value type.
#define BP_INT(expr)                                                                                         \
    .get = [](const BatchingConfig &c) { return double(c.expr); },                                           \
    .set = [](BatchingConfig &c, double v) { c.expr = static_cast<decltype(c.expr)>(std::llround(v)); }
#define BP_DOUBLE(expr)                                                                                      \
    .get = [](const BatchingConfig &c) { return double(c.expr); },                                           \
    .set = [](BatchingConfig &c, double v) { c.expr = v; }
#define BP_BOOL(expr)                                                                                        \
    .get = [](const BatchingConfig &c) { return c.expr ? 1.0 : 0.0; },                                       \
    .set = [](BatchingConfig &c, double v) { c.expr = v != 0; }
#define BP_DURATION(expr)                                                                                    \
    .get = [](const BatchingConfig &c) { return us(c.expr); },                                               \
    .set = [](BatchingConfig &c, double v) { c.expr = fromUs(v); }
#define BP_LIST(expr)                                                                                        \
    .items = [](const BatchingConfig &c) -> const std::vector<int> & { return c.expr; },                     \
    .itemsMut = [](BatchingConfig &c) -> std::vector<int> & { return c.expr; }
// A server model's knob: its server, its name there and its launch flag.
#define BP_SERVER(kind, serverName, launchFlag)                                                              \
    .server = ServerKind::kind, .name = serverName, .flag = launchFlag
#define BP_TEXT(expr)                                                                                        \
    .text = [](const BatchingConfig &c) { return c.expr; },                                                  \
    .setText = [](BatchingConfig &c, std::string v) { c.expr = std::move(v); }

constexpr PolicyMask kDynamic = policyBit(PolicyKind::Dynamic);
constexpr std::string_view kSglangPolicies[] = {"fcfs", "lpm"};
// The tuner's coarse grids (tune_space_servers.cpp).
constexpr double kVllmSeqsGrid[] = {8, 16, 32, 64, 128, 256};
constexpr double kVllmTokensGrid[] = {256, 512, 1024, 2048, 4096, 8192};
constexpr double kOnOffGrid[] = {1, 0};
constexpr double kTgiPrefillGrid[] = {512, 1024, 2048, 4096, 8192};
constexpr double kTgiRatioGrid[] = {0.0, 0.3, 0.6, 1.2};
constexpr double kTgiWaitsGrid[] = {5, 20, 60};
constexpr double kSglangRunningGrid[] = {16, 32, 64, 128, 256};
constexpr double kSglangChunkGrid[] = {512, 2048, 8192};
constexpr double kSglangConservativenessGrid[] = {0.5, 1.0, 1.5};
constexpr double kLlamaCppSlotsGrid[] = {1, 2, 4, 8, 16};
constexpr double kLlamaCppBatchGrid[] = {256, 512, 2048};

const Knob kKnobs[] = {
    {.key = "policy",
     .type = KnobType::Policy,
     .unit = "",
     .lo = 0,
     .hi = 5,
     .doc = "`none`, `static`, `dynamic`, `bucketed`, `hybrid` or `continuous` (docs/scheduling.md)",
     .get = [](const BatchingConfig &c) { return double(int(c.policy)); },
     .set = [](BatchingConfig &c, double v) { c.policy = PolicyKind(int(v)); }},
    {.key = "max_batch_size",
     .type = KnobType::Int,
     .unit = "requests",
     .lo = 1,
     .hi = kMaxBatch,
     .policies = kDynamicLike,
     .doc = "largest batch (hybrid: of its dynamic layer)",
     BP_INT(maxBatchSize)},
    {.key = "max_queue_delay_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxDelayUs,
     .policies = kDynamicLike,
     .doc = "how long the oldest request may wait for company",
     BP_DURATION(maxQueueDelay)},
    {.key = "static_batch_size",
     .type = KnobType::Int,
     .unit = "requests",
     .lo = 1,
     .hi = kMaxBatch,
     .policies = kStatic,
     .doc = "the batch size N the policy waits for",
     BP_INT(staticBatchSize)},
    {.key = "static_padded_length",
     .type = KnobType::Int,
     .unit = "tokens",
     .lo = 1,
     .hi = kMaxLength,
     .policies = kStatic,
     .doc = "every batch is padded to this length; longer requests are rejected at submit",
     BP_INT(staticPaddedLength)},
    {.key = "static_flush_on_drain",
     .type = KnobType::Bool,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .policies = kStatic,
     .doc = "on shutdown, run a partial batch (true) or fail it (false)",
     BP_BOOL(staticFlushOnDrain)},
    {.key = "bucket_edges",
     .type = KnobType::IntList,
     .unit = "tokens",
     .lo = 1,
     .hi = kMaxLength,
     .policies = kBucketed,
     .doc = "inclusive upper edges of the length buckets; longer requests go to an overflow bucket",
     BP_LIST(bucketEdges),
     .minItems = 1,
     .maxItems = 32,
     .itemLabel = "bucket"},
    {.key = "queue_capacity",
     .type = KnobType::Int,
     .unit = "requests",
     .lo = 1,
     .hi = 1'000'000,
     .step = 256,
     .doc = "admission queue depth, all queues together; beyond it submit fails with `queue_full` (429)",
     BP_INT(queueCapacity)},
    {.key = "instances",
     .type = KnobType::Int,
     .unit = "instances",
     .lo = 1,
     .hi = 16,
     .doc = "model instances: each is a thread running one batch at a time on the model",
     BP_INT(instances)},
    {.key = "memory_batch_limit",
     .type = KnobType::Int,
     .unit = "requests",
     .lo = 0,
     .hi = kMaxBatch,
     .doc = "cap on any batch, set by the memory guard after an out-of-memory error (0 = none)",
     BP_INT(memoryBatchLimit)},
    {.key = "priority_aging_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 1e3,
     .hi = 60e6,
     .doc =
         "a request's effective priority grows by one per period waited (lower priorities are delayed, never "
         "starved)",
     BP_DURATION(priorityAging)},

    {.key = "adaptive_delay.enabled",
     .type = KnobType::Bool,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .policies = kDynamicLike,
     .doc = "queue delay from the arrival rate instead of `max_queue_delay_us`",
     BP_BOOL(adaptiveDelay.enabled)},
    {.key = "adaptive_delay.min_delay_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxDelayUs,
     .policies = kDynamicLike,
     .doc = "shortest adaptive delay",
     BP_DURATION(adaptiveDelay.minDelay)},
    {.key = "adaptive_delay.max_delay_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxDelayUs,
     .loKnob = "adaptive_delay.min_delay_us",
     .policies = kDynamicLike,
     .doc = "longest adaptive delay",
     BP_DURATION(adaptiveDelay.maxDelay)},
    {.key = "adaptive_delay.period_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 10e3,
     .hi = 60e6,
     .policies = kDynamicLike,
     .doc = "how often the delay is re-evaluated from the rate",
     BP_DURATION(adaptiveDelay.period)},
    {.key = "adaptive_delay.fill",
     .type = KnobType::Double,
     .unit = "batches",
     .lo = 0,
     .hi = 4,
     .loKind = BoundKind::Exclusive,
     .step = 0.25,
     .policies = kDynamicLike,
     .doc = "the delay is the time the rate needs to fill this many max-size batches",
     BP_DOUBLE(adaptiveDelay.fill)},

    {.key = "slo.enabled",
     .type = KnobType::Bool,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .policies = kDynamicLike,
     .doc = "AIMD controller (origin `slo-controller` in the config history): shrink batch and delay when "
            "p99 exceeds the target, grow them otherwise",
     BP_BOOL(slo.enabled)},
    {.key = "slo.p99_target_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 1,
     .hi = 60e6,
     .policies = kDynamicLike,
     .doc = "p99 of total latency the controller aims for",
     BP_DURATION(slo.p99Target)},
    {.key = "slo.min_batch",
     .type = KnobType::Int,
     .unit = "requests",
     .lo = 1,
     .hi = kMaxBatch,
     .policies = kDynamicLike,
     .doc = "lowest max_batch_size the controller sets",
     BP_INT(slo.minBatch)},
    {.key = "slo.max_batch",
     .type = KnobType::Int,
     .unit = "requests",
     .lo = 1,
     .hi = kMaxBatch,
     .loKnob = "slo.min_batch",
     .policies = kDynamicLike,
     .doc = "highest max_batch_size the controller sets",
     BP_INT(slo.maxBatch)},
    {.key = "slo.max_delay_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxDelayUs,
     .policies = kDynamicLike,
     .doc = "longest queue delay the controller sets",
     BP_DURATION(slo.maxDelay)},
    {.key = "slo.min_delay_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxDelayUs,
     .hiKnob = "slo.max_delay_us",
     .policies = kDynamicLike,
     .doc = "shortest queue delay the controller sets",
     BP_DURATION(slo.minDelay)},
    {.key = "slo.period_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 100e3,
     .hi = 600e6,
     .policies = kDynamicLike,
     .doc = "how often the controller compares p99 with the target",
     BP_DURATION(slo.period)},
    {.key = "slo.batch_step",
     .type = KnobType::Int,
     .unit = "requests",
     .lo = 1,
     .hi = kMaxBatch,
     .policies = kDynamicLike,
     .doc = "additive increase of max_batch_size per period under target",
     BP_INT(slo.batchStep)},
    {.key = "slo.delay_step_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxDelayUs,
     .policies = kDynamicLike,
     .doc = "additive increase of the queue delay per period under target",
     BP_DURATION(slo.delayStep)},
    {.key = "slo.decrease",
     .type = KnobType::Double,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .loKind = BoundKind::Exclusive,
     .hiKind = BoundKind::Exclusive,
     .step = 0.05,
     .policies = kDynamicLike,
     .doc = "multiplicative decrease of batch and delay when p99 is over target",
     BP_DOUBLE(slo.decrease)},

    {.key = "hybrid.static_sizes",
     .type = KnobType::IntList,
     .unit = "requests",
     .lo = 1,
     .hi = kMaxBatch,
     .policies = kHybrid,
     .doc = "sizes of the static layer's queues",
     BP_LIST(hybrid.staticSizes),
     .minItems = 1,
     .maxItems = 8,
     .itemLabel = "queue"},
    {.key = "hybrid.max_static_length",
     .type = KnobType::Int,
     .unit = "tokens",
     .lo = 1,
     .hi = kMaxLength,
     .policies = kHybrid,
     .doc = "longest request the static layer takes; it pads to this length",
     BP_INT(hybrid.maxStaticLength)},
    {.key = "hybrid.min_static_rate",
     .type = KnobType::Double,
     .unit = "req/s",
     .lo = 0,
     .hi = 1e7,
     .step = 10,
     .policies = kHybrid,
     .doc = "below this arrival rate everything goes to the dynamic layer",
     BP_DOUBLE(hybrid.minStaticRate)},
    {.key = "hybrid.static_max_wait_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxDelayUs,
     .policies = kHybrid,
     .doc = "a static queue leaves after this wait even when not full",
     BP_DURATION(hybrid.staticMaxWait)},

    {.key = "cache.enabled",
     .type = KnobType::Bool,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .doc = "LRU response cache keyed by the exact input tokens and max_new_tokens",
     BP_BOOL(cache.enabled)},
    {.key = "cache.max_entries",
     .type = KnobType::Int,
     .unit = "entries",
     .lo = 1,
     .hi = 10'000'000,
     .step = 1024,
     .doc = "cache size in entries",
     BP_INT(cache.maxEntries)},
    {.key = "cache.max_bytes",
     .type = KnobType::Int,
     .unit = "bytes",
     .lo = 1024,
     .hi = double(16LL << 30),
     .step = double(1 << 20),
     .doc = "cache size in bytes of stored outputs",
     BP_INT(cache.maxBytes)},
    {.key = "continuous.max_num_seqs",
     .type = KnobType::Int,
     .unit = "sequences",
     .lo = 1,
     .hi = kMaxBatch,
     .policies = kContinuous,
     .doc = "running sequences: a finished one's slot goes to a waiting request at the next step",
     BP_INT(continuous.maxNumSeqs)},
    {.key = "continuous.max_num_batched_tokens",
     .type = KnobType::Int,
     .unit = "tokens",
     .lo = 1,
     .hi = kMaxLength,
     .policies = kContinuous,
     .doc = "token budget per step: one per decoding sequence plus prompt (chunk) tokens",
     BP_INT(continuous.maxNumBatchedTokens)},
    {.key = "continuous.chunked_prefill",
     .type = KnobType::Bool,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .policies = kContinuous,
     .doc = "feed long prompts in chunks beside running decodes (else whole, in a step with room)",
     BP_BOOL(continuous.chunkedPrefill)},
    {.key = "continuous.prefill_chunk",
     .type = KnobType::Int,
     .unit = "tokens",
     .lo = 1,
     .hi = kMaxLength,
     .policies = kContinuous,
     .doc = "largest prompt chunk per step with chunked prefill",
     BP_INT(continuous.prefillChunk)},
    {.key = "continuous.decode_first",
     .type = KnobType::Bool,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .policies = kContinuous,
     .doc = "decodes take the step's budget before prefills (else prefills first: lower TTFT)",
     BP_BOOL(continuous.decodeFirst)},
    {.key = "continuous.kv_cache_tokens",
     .type = KnobType::Int,
     .unit = "tokens",
     .lo = 0,
     .hi = 1e8,
     .policies = kContinuous,
     .doc = "KV-cache budget; when full the newest running sequence is preempted (recompute); 0 = the "
            "model's KV pool (a paged decoder: kv_memory_fraction of free memory), else unlimited. A paged "
            "model's pool is sized when an engine starts; live, the budget may only go down",
     BP_INT(continuous.kvCacheTokens)},
    {.key = "continuous.kv_memory_fraction",
     .type = KnobType::Double,
     .unit = "",
     .lo = 0.01,
     .hi = 1,
     .policies = kContinuous,
     .doc = "at kv_cache_tokens 0: the share of the device's free memory a paged model's KV pool takes "
            "(vLLM's gpu_memory_utilization); applied when an engine starts",
     BP_DOUBLE(continuous.kvMemoryFraction)},
    {.key = "continuous.priority_order",
     .type = KnobType::Bool,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .policies = kContinuous,
     .doc = "join order: false = FCFS, true = by priority, then arrival",
     BP_BOOL(continuous.priorityOrder)},
    {.key = "prefix_cache.enabled",
     .type = KnobType::Bool,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .policies = kContinuous,
     .doc = "KV prefix cache: a request's leading cached blocks skip prefill (inside kv_cache_tokens; LRU "
            "eviction of unreferenced blocks)",
     BP_BOOL(prefixCache.enabled)},
    {.key = "prefix_cache.block_tokens",
     .type = KnobType::Int,
     .unit = "tokens",
     .lo = 1,
     .hi = 4096,
     .policies = kContinuous,
     .doc = "tokens per cached block (only whole blocks are cached); a live change drops the cache",
     BP_INT(prefixCache.blockTokens)},

    // Not batching knobs but the yardstick goodput is measured against
    // (snapshot, /metrics, session summaries); every policy reads them.
    {.key = "goodput.ttft_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxSloUs,
     .doc = "goodput SLO: time to first token at most this; 0 = not set",
     BP_DURATION(goodput.ttft)},
    {.key = "goodput.tpot_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxSloUs,
     .doc = "goodput SLO: time per output token, (last - first) / (n - 1), at most this; 0 = not set",
     BP_DURATION(goodput.tpot)},
    {.key = "goodput.e2e_us",
     .type = KnobType::Duration,
     .unit = "µs",
     .lo = 0,
     .hi = kMaxSloUs,
     .doc = "goodput SLO: end-to-end latency at most this; 0 = not set. Good = completed OK within every set "
            "SLO",
     BP_DURATION(goodput.e2e)},

    // A server knob a few lines, its fields in the order Knob declares them.
    // clang-format off
    // vLLM V1 (vllm/v1/core/sched/scheduler.py, config/scheduler.py, cache.py).
    {.key = "server.vllm.max_num_seqs", .type = KnobType::Int, .unit = "sequences", .lo = 1, .hi = 65536,
     .policies = kContinuous,
     .doc = "running sequences",
     BP_INT(server.vllm.maxNumSeqs), BP_SERVER(Vllm, "max_num_seqs", "max-num-seqs"),
     .ours = "continuous.max_num_seqs", .tuneAxis = TuneAxis::Size, .tuneGrid = kVllmSeqsGrid},
    {.key = "server.vllm.max_num_batched_tokens", .type = KnobType::Int, .unit = "tokens", .lo = 1, .hi = 1e6,
     .policies = kContinuous,
     .doc = "token budget per step",
     BP_INT(server.vllm.maxNumBatchedTokens),
     BP_SERVER(Vllm, "max_num_batched_tokens", "max-num-batched-tokens"),
     .ours = "continuous.max_num_batched_tokens", .tuneAxis = TuneAxis::Tokens,
     .tuneGrid = kVllmTokensGrid},
    {.key = "server.vllm.enable_chunked_prefill", .type = KnobType::Bool, .unit = "", .lo = 0, .hi = 1,
     .policies = kContinuous,
     .doc = "long prompts in chunks beside running decodes (else a prompt waits for a step it fits)",
     BP_BOOL(server.vllm.chunkedPrefill),
     BP_SERVER(Vllm, "enable_chunked_prefill", "enable-chunked-prefill"),
     .ours = "continuous.chunked_prefill", .tuneAxis = TuneAxis::Flag,
     .tuneGrid = kOnOffGrid},
    {.key = "server.vllm.long_prefill_token_threshold", .type = KnobType::Int, .unit = "tokens", .lo = 0,
     .hi = kUnbounded, .hiKind = BoundKind::Exclusive, .policies = kContinuous,
     .doc = "a prompt chunk's cap per step; 0 = off",
     BP_INT(server.vllm.longPrefillTokenThreshold),
     BP_SERVER(Vllm, "long_prefill_token_threshold", "long-prefill-token-threshold"), .zeroUnset = true},
    {.key = "server.vllm.block_size", .type = KnobType::Int, .unit = "tokens", .lo = 1, .hi = 1024,
     .policies = kContinuous,
     .doc = "tokens per KV block",
     BP_INT(server.vllm.blockSize), BP_SERVER(Vllm, "block_size", {}), .listed = false},
    {.key = "server.vllm.kv_cache_tokens", .type = KnobType::Int, .unit = "tokens", .lo = 0, .hi = kUnbounded,
     .hiKind = BoundKind::Exclusive, .policies = kContinuous,
     .doc = "the KV cache (num_gpu_blocks × block_size); recompute preemption when full; 0 = unlimited",
     BP_INT(server.vllm.kvCacheTokens), BP_SERVER(Vllm, "kv_cache_tokens", {}), .zeroUnset = true},

    // TGI (router/src/main.rs launcher flags; backends/v3/src/backend.rs, queue.rs).
    {.key = "server.tgi.max_batch_total_tokens", .type = KnobType::Int, .unit = "tokens", .lo = 1, .hi = 1e8,
     .policies = kContinuous,
     .doc = "tokens of a running batch, prompts and generated (the server's KV memory: the tuner keeps it)",
     BP_INT(server.tgi.maxBatchTotalTokens),
     BP_SERVER(Tgi, "max_batch_total_tokens", "max-batch-total-tokens"), .ours = "continuous.kv_cache_tokens"},
    {.key = "server.tgi.max_batch_prefill_tokens", .type = KnobType::Int, .unit = "tokens", .lo = 1,
     .hi = 1e7, .policies = kContinuous,
     .doc = "prompt tokens of one prefill batch",
     BP_INT(server.tgi.maxBatchPrefillTokens),
     BP_SERVER(Tgi, "max_batch_prefill_tokens", "max-batch-prefill-tokens"),
     .ours = "continuous.max_num_batched_tokens", .tuneAxis = TuneAxis::Tokens,
     .tuneGrid = kTgiPrefillGrid},
    {.key = "server.tgi.waiting_served_ratio", .type = KnobType::Double, .unit = "", .lo = 0, .hi = 100,
     .step = 0.1, .policies = kContinuous,
     .doc = "a new prefill batch needs at least this many waiting requests per running one",
     BP_DOUBLE(server.tgi.waitingServedRatio), BP_SERVER(Tgi, "waiting_served_ratio", "waiting-served-ratio"),
     .tuneAxis = TuneAxis::Ratio, .tuneGrid = kTgiRatioGrid},
    {.key = "server.tgi.max_waiting_tokens", .type = KnobType::Int, .unit = "steps", .lo = 1, .hi = 1e6,
     .policies = kContinuous,
     .doc = "decode steps after which waiting requests get a prefill whatever the ratio",
     BP_INT(server.tgi.maxWaitingTokens), BP_SERVER(Tgi, "max_waiting_tokens", "max-waiting-tokens"),
     .tuneAxis = TuneAxis::Size, .tuneGrid = kTgiWaitsGrid},
    {.key = "server.tgi.max_batch_size", .type = KnobType::Int, .unit = "requests", .lo = 0, .hi = 65536,
     .policies = kContinuous,
     .doc = "requests of a running batch; 0 = none",
     BP_INT(server.tgi.maxBatchSize), BP_SERVER(Tgi, "max_batch_size", "max-batch-size"), .zeroUnset = true,
     .ours = "continuous.max_num_seqs"},
    {.key = "server.tgi.max_concurrent_requests", .type = KnobType::Int, .unit = "requests", .lo = 1,
     .hi = 1e6, .policies = kContinuous,
     .doc = "requests in the server at once; beyond it a request is refused",
     BP_INT(server.tgi.maxConcurrentRequests),
     BP_SERVER(Tgi, "max_concurrent_requests", "max-concurrent-requests"), .ours = "queue_capacity"},

    // SGLang (python/sglang/srt/server_args.py; managers/scheduler.py, schedule_policy.py).
    {.key = "server.sglang.max_running_requests", .type = KnobType::Int, .unit = "requests", .lo = 1,
     .hi = 65536, .policies = kContinuous,
     .doc = "running requests",
     BP_INT(server.sglang.maxRunningRequests),
     BP_SERVER(Sglang, "max_running_requests", "max-running-requests"), .tuneAxis = TuneAxis::Size,
     .tuneGrid = kSglangRunningGrid},
    {.key = "server.sglang.chunked_prefill_size", .type = KnobType::Int, .unit = "tokens", .lo = 0, .hi = 1e7,
     .policies = kContinuous,
     .doc = "largest prompt chunk per step; 0 = no chunking (the flag's -1)",
     BP_INT(server.sglang.chunkedPrefillSize),
     BP_SERVER(Sglang, "chunked_prefill_size", "chunked-prefill-size"), .flagZero = "-1",
     .tuneAxis = TuneAxis::Tokens, .tuneGrid = kSglangChunkGrid},
    {.key = "server.sglang.max_prefill_tokens", .type = KnobType::Int, .unit = "tokens", .lo = 1, .hi = 1e7,
     .policies = kContinuous,
     .doc = "prompt tokens of one prefill step",
     BP_INT(server.sglang.maxPrefillTokens), BP_SERVER(Sglang, "max_prefill_tokens", "max-prefill-tokens")},
    {.key = "server.sglang.schedule_policy", .type = KnobType::Text, .unit = "", .policies = kContinuous,
     .doc = "waiting order; lpm (longest prefix match) is fcfs without a prefix cache",
     BP_TEXT(server.sglang.schedulePolicy), .choices = kSglangPolicies,
     BP_SERVER(Sglang, "schedule_policy", "schedule-policy")},
    {.key = "server.sglang.schedule_conservativeness", .type = KnobType::Double, .unit = "", .lo = 0,
     .hi = 10, .loKind = BoundKind::Exclusive, .step = 0.1, .policies = kContinuous,
     .doc = "how much KV room admission reserves for the running requests' future tokens",
     BP_DOUBLE(server.sglang.scheduleConservativeness),
     BP_SERVER(Sglang, "schedule_conservativeness", "schedule-conservativeness"), .tuneAxis = TuneAxis::Ratio,
     .tuneGrid = kSglangConservativenessGrid},
    {.key = "server.sglang.max_total_tokens", .type = KnobType::Int, .unit = "tokens", .lo = 0,
     .hi = kUnbounded, .hiKind = BoundKind::Exclusive, .policies = kContinuous,
     .doc = "the KV pool; retraction when full; 0 = unlimited",
     BP_INT(server.sglang.maxTotalTokens), BP_SERVER(Sglang, "max_total_tokens", {}), .zeroUnset = true},

    // Triton's dynamic batcher (model_config.proto DynamicBatching); its
    // max_batch_size and max_queue_delay_microseconds are max_batch_size and
    // max_queue_delay_us above.
    {.key = "server.triton.preferred_batch_size", .type = KnobType::IntList, .unit = "requests", .lo = 1,
     .hi = kMaxBatch, .hiKnob = "max_batch_size", .policies = kDynamic,
     .doc = "batch sizes the batcher prefers to dispatch at",
     BP_LIST(server.triton.preferredBatchSize), .minItems = 0, .maxItems = 32,
     BP_SERVER(Triton, "preferred_batch_size", {}), .zeroUnset = true},

    // llama.cpp's llama-server (common/common.h common_params, common/arg.cpp; tools/server/).
    {.key = "server.llamacpp.n_parallel", .type = KnobType::Int, .unit = "slots", .lo = 1, .hi = 4096,
     .policies = kContinuous,
     .doc = "slots: requests generating at once; the rest wait in the deferred queue",
     BP_INT(server.llamacpp.nParallel), BP_SERVER(LlamaCpp, "n_parallel", "parallel"), .shortFlag = "np", .ours = "continuous.max_num_seqs",
     .tuneAxis = TuneAxis::Size, .tuneGrid = kLlamaCppSlotsGrid},
    {.key = "server.llamacpp.n_ctx", .type = KnobType::Int, .unit = "tokens", .lo = 1, .hi = 1e8,
     .policies = kContinuous,
     .doc = "the KV cache of all slots (the server's memory: the tuner keeps it); a slot's context is "
            "n_ctx, or n_ctx / n_parallel without kv_unified",
     BP_INT(server.llamacpp.nCtx), BP_SERVER(LlamaCpp, "n_ctx", "ctx-size"), .shortFlag = "c",
     .ours = "continuous.kv_cache_tokens"},
    {.key = "server.llamacpp.n_batch", .type = KnobType::Int, .unit = "tokens", .lo = 1, .hi = 1e7,
     .policies = kContinuous,
     .doc = "tokens of one llama_decode: every generating slot's token, then prompt chunks up to it",
     BP_INT(server.llamacpp.nBatch), BP_SERVER(LlamaCpp, "n_batch", "batch-size"), .shortFlag = "b",
     .ours = "continuous.max_num_batched_tokens",
     .tuneAxis = TuneAxis::Tokens, .tuneGrid = kLlamaCppBatchGrid},
    {.key = "server.llamacpp.n_ubatch", .type = KnobType::Int, .unit = "tokens", .lo = 1, .hi = 1e7,
     .policies = kContinuous,
     .doc = "tokens of one compute pass inside a llama_decode (at most n_batch)",
     BP_INT(server.llamacpp.nUbatch), BP_SERVER(LlamaCpp, "n_ubatch", "ubatch-size"), .shortFlag = "ub"},
    {.key = "server.llamacpp.kv_unified", .type = KnobType::Bool, .unit = "", .policies = kContinuous,
     .doc = "one KV cache the slots share (each slot may use all of n_ctx)",
     BP_BOOL(server.llamacpp.kvUnified), BP_SERVER(LlamaCpp, "kv_unified", "kv-unified"), .shortFlag = "kvu"},
    {.key = "server.llamacpp.n_cache_reuse", .type = KnobType::Int, .unit = "tokens", .lo = 0, .hi = 1e7,
     .policies = kContinuous,
     .doc = "--cache-reuse: reuse cached chunks of at least this size by KV shifting; 0 = off",
     BP_INT(server.llamacpp.nCacheReuse), BP_SERVER(LlamaCpp, "n_cache_reuse", "cache-reuse"),
     .zeroUnset = true},
    // clang-format on
};

// Launch flags that are settings only (ServerFlag): vLLM's engine arguments
// (docs.vllm.ai/en/latest/configuration/engine_args.html) and
// text-generation-launcher's (huggingface.co/docs/text-generation-inference/reference/launcher)
// that bear on batching without a knob row; every other flag is kept as a
// setting too, its type guessed from its value.
const ServerFlag kSettingFlags[] = {
    {ServerKind::Vllm, "scheduling-policy", KnobType::Text},
    {ServerKind::Vllm, "max-model-len", KnobType::Int},
    {ServerKind::Vllm, "block-size", KnobType::Int},
    {ServerKind::Vllm, "num-gpu-blocks-override", KnobType::Int},
    {ServerKind::Vllm, "gpu-memory-utilization", KnobType::Double},
    {ServerKind::Vllm, "enable-prefix-caching", KnobType::Bool},
    {ServerKind::Vllm, "tensor-parallel-size", KnobType::Int},
    {ServerKind::Vllm, "data-parallel-size", KnobType::Int},
    {ServerKind::Tgi, "max-input-tokens", KnobType::Int},
    {ServerKind::Tgi, "max-input-length", KnobType::Int},
    {ServerKind::Tgi, "max-total-tokens", KnobType::Int},
    {ServerKind::Tgi, "num-shard", KnobType::Int},
};

#undef BP_INT
#undef BP_DOUBLE
#undef BP_BOOL
#undef BP_DURATION
#undef BP_LIST
#undef BP_TEXT
#undef BP_SERVER

// The rows of one server, contiguous in the table (BatchPilot's come first).
std::span<const Knob> rowsOf(ServerKind kind)
{
    const auto first = std::find_if(std::begin(kKnobs), std::end(kKnobs),
                                    [kind](const Knob &k) { return k.server == kind; });
    const auto last =
        std::find_if(first, std::end(kKnobs), [kind](const Knob &k) { return k.server != kind; });
    return {first, last};
}

} // namespace

std::span<const Knob> knobs()
{
    static const std::span<const Knob> rows = rowsOf(ServerKind::BatchPilot);
    return rows;
}

std::span<const Knob> serverKnobs(ServerKind kind)
{
    if (kind == ServerKind::BatchPilot)
        return {};
    return rowsOf(kind);
}

std::span<const Knob> allKnobs()
{
    return kKnobs;
}

std::span<const ServerFlag> serverSettingFlags(ServerKind kind)
{
    const auto first = std::find_if(std::begin(kSettingFlags), std::end(kSettingFlags),
                                    [kind](const ServerFlag &f) { return f.server == kind; });
    const auto last = std::find_if(first, std::end(kSettingFlags),
                                   [kind](const ServerFlag &f) { return f.server != kind; });
    return {first, last};
}

const Knob *serverRowFor(ServerKind kind, std::string_view ours)
{
    for (const Knob &k : serverKnobs(kind))
        if (k.ours == ours)
            return &k;
    return nullptr;
}

} // namespace bp
