#include "knobs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

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
constexpr double kMaxBatch = 1024, kMaxLength = 65536, kMaxDelayUs = 10e6;

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
     .doc = "KV-cache budget; when full the newest running sequence is preempted (recompute); 0 = unlimited",
     BP_INT(continuous.kvCacheTokens)},
    {.key = "continuous.priority_order",
     .type = KnobType::Bool,
     .unit = "",
     .lo = 0,
     .hi = 1,
     .policies = kContinuous,
     .doc = "join order: false = FCFS, true = by priority, then arrival",
     BP_BOOL(continuous.priorityOrder)},
};

#undef BP_INT
#undef BP_DOUBLE
#undef BP_BOOL
#undef BP_DURATION
#undef BP_LIST

// 1024, 1e+07 -> "10000000", 0.5
std::string number(double v)
{
    char buf[32];
    if (v == std::floor(v) && std::abs(v) < 1e15)
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else
        std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

std::string formatIn(const Knob &k, double v)
{
    switch (k.type) {
    case KnobType::Duration: return formatDuration(fromUs(v));
    case KnobType::Bool: return v != 0 ? "true" : "false";
    case KnobType::Policy: return std::string(policyName(PolicyKind(int(v))));
    default: return number(v);
    }
}

double boundValue(const BatchingConfig &c, std::string_view knob, double fallback)
{
    if (knob.empty())
        return fallback;
    const Knob *other = findKnob(knob);
    return other && other->get ? other->get(c) : fallback;
}

bool inside(double v, double lo, BoundKind loKind, double hi, BoundKind hiKind)
{
    // Written so that NaN is outside every range.
    const bool aboveLo = loKind == BoundKind::Inclusive ? v >= lo : v > lo;
    const bool belowHi = hiKind == BoundKind::Inclusive ? v <= hi : v < hi;
    return aboveLo && belowHi;
}

std::string rangeText(const Knob &k, double lo, double hi)
{
    return std::string(k.loKind == BoundKind::Inclusive ? "[" : "(") + formatIn(k, lo) + ", " +
           formatIn(k, hi) + (k.hiKind == BoundKind::Inclusive ? "]" : ")");
}

std::string joinItems(const std::vector<int> &items)
{
    std::string s;
    for (std::size_t i = 0; i < items.size(); ++i)
        s += (i ? "," : "") + std::to_string(items[i]);
    return s;
}

} // namespace

std::string Knob::label() const
{
    if (type == KnobType::Duration && key.ends_with("_us"))
        return std::string(key.substr(0, key.size() - 3));
    return std::string(key);
}

std::span<const Knob> knobs()
{
    return kKnobs;
}

const Knob *findKnob(std::string_view key)
{
    for (const Knob &k : kKnobs)
        if (k.key == key)
            return &k;
    return nullptr;
}

Status checkKnob(const Knob &k, const BatchingConfig &c)
{
    if (k.type == KnobType::Policy || k.type == KnobType::Bool)
        return Status::ok(); // every representable value is valid
    if (k.type == KnobType::IntList) {
        const std::vector<int> &items = k.items(c);
        if (items.size() < k.minItems || items.size() > k.maxItems)
            return {StatusCode::InvalidArgument, k.label() + " needs " + std::to_string(k.minItems) + " to " +
                                                     std::to_string(k.maxItems) + " items, got " +
                                                     std::to_string(items.size())};
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (!inside(items[i], k.lo, k.loKind, k.hi, k.hiKind))
                return {StatusCode::InvalidArgument, k.label() + "[" + std::to_string(i) +
                                                         "] = " + std::to_string(items[i]) + " is outside " +
                                                         rangeText(k, k.lo, k.hi)};
            if (i > 0 && items[i] <= items[i - 1])
                return {StatusCode::InvalidArgument,
                        k.label() + " must be strictly increasing: " + joinItems(items)};
        }
        return Status::ok();
    }
    const double v = k.get(c);
    const double lo = boundValue(c, k.loKnob, k.lo);
    const double hi = boundValue(c, k.hiKnob, k.hi);
    if (inside(v, lo, k.loKind, hi, k.hiKind) && inside(v, k.lo, k.loKind, k.hi, k.hiKind))
        return Status::ok();
    // A cross-field bound that is itself out of range is reported on its own knob.
    const double shownLo = std::max(lo, k.lo), shownHi = std::min(hi, k.hi);
    return {StatusCode::InvalidArgument,
            k.label() + " = " + formatIn(k, v) + " is outside " + rangeText(k, shownLo, shownHi)};
}

std::string formatKnobValue(const Knob &k, const BatchingConfig &c)
{
    if (k.type == KnobType::IntList)
        return "[" + joinItems(k.items(c)) + "]";
    return formatIn(k, k.get(c));
}

std::string formatKnobRange(const Knob &k)
{
    switch (k.type) {
    case KnobType::Policy: return "none, static, dynamic, bucketed, hybrid, continuous";
    case KnobType::Bool: return "true, false";
    case KnobType::IntList:
        return std::to_string(k.minItems) + " – " + std::to_string(k.maxItems) + " items, each " +
               rangeText(k, k.lo, k.hi) + ", strictly increasing";
    default: break;
    }
    std::string lo = k.loKnob.empty() ? formatIn(k, k.lo) : "`" + std::string(k.loKnob) + "`";
    std::string hi = k.hiKnob.empty() ? formatIn(k, k.hi) : "`" + std::string(k.hiKnob) + "`";
    return std::string(k.loKind == BoundKind::Inclusive ? "[" : "(") + lo + ", " + hi +
           (k.hiKind == BoundKind::Inclusive ? "]" : ")");
}

std::string knobPolicies(const Knob &k)
{
    if (k.policies == kAllPolicies)
        return "all";
    std::string s;
    for (auto p : {PolicyKind::None, PolicyKind::Static, PolicyKind::Dynamic, PolicyKind::Bucketed,
                   PolicyKind::Hybrid, PolicyKind::Continuous})
        if (k.appliesTo(p))
            s += (s.empty() ? "" : ", ") + std::string(policyName(p));
    return s;
}

std::string knobGaugeName(const Knob &k)
{
    std::string name = "batchpilot_config_" + k.label();
    std::replace(name.begin(), name.end(), '.', '_');
    if (k.type == KnobType::Duration)
        name += "_seconds";
    if (k.type == KnobType::IntList && name.ends_with('s'))
        name.pop_back(); // one gauge per item: bucket_edge{bucket="0"}
    return name;
}

double knobGaugeValue(const Knob &k, const BatchingConfig &c)
{
    const double v = k.get(c);
    return k.type == KnobType::Duration ? v / 1e6 : v;
}

std::string knobsMarkdown()
{
    const BatchingConfig defaults;
    std::string md = "| JSON key | policies | meaning | default | unit | valid range |\n"
                     "| --- | --- | --- | --- | --- | --- |\n";
    for (const Knob &k : kKnobs) {
        std::string def = formatKnobValue(k, defaults);
        if (k.type == KnobType::Duration && k.get(defaults) != 0)
            def = number(k.get(defaults)) + " (" + def + ")";
        md += "| `" + std::string(k.key) + "` | " + knobPolicies(k) + " | " + std::string(k.doc) + " | " +
              def + " | " + std::string(k.unit.empty() ? "—" : k.unit) + " | " + formatKnobRange(k) + " |\n";
    }
    return md;
}

} // namespace bp
