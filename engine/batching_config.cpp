#include "batching_config.h"

#include <algorithm>
#include <cstdio>

namespace bp {

namespace {
constexpr int kMaxBatch = 1024;
constexpr int kMaxLength = 65536;
constexpr int kMaxEdges = 32;
constexpr int kMaxQueue = 1'000'000;
constexpr int kMaxInstances = 16;
constexpr Duration kMaxDelay = std::chrono::seconds(10);

Status outOfRange(std::string_view field, long long value, long long lo, long long hi)
{
    return {StatusCode::InvalidArgument, std::string(field) + " = " + std::to_string(value) +
                                             " is outside [" + std::to_string(lo) + ", " +
                                             std::to_string(hi) + "]"};
}

std::string joinEdges(const std::vector<int> &edges)
{
    std::string s;
    for (size_t i = 0; i < edges.size(); ++i) {
        if (i)
            s += ',';
        s += std::to_string(edges[i]);
    }
    return s;
}
Status durationRange(std::string_view field, Duration d, Duration lo, Duration hi)
{
    if (d < lo || d > hi)
        return {StatusCode::InvalidArgument, std::string(field) + " = " + formatDuration(d) + " is outside [" +
                                                 formatDuration(lo) + ", " + formatDuration(hi) + "]"};
    return Status::ok();
}

Status validateAdaptive(const AdaptiveDelayConfig &a)
{
    if (Status s = durationRange("adaptive_delay.min_delay", a.minDelay, Duration::zero(), kMaxDelay); !s)
        return s;
    if (Status s = durationRange("adaptive_delay.max_delay", a.maxDelay, a.minDelay, kMaxDelay); !s)
        return s;
    if (Status s = durationRange("adaptive_delay.period", a.period, std::chrono::milliseconds(10),
                                 std::chrono::seconds(60));
        !s)
        return s;
    if (!(a.fill > 0 && a.fill <= 4))
        return {StatusCode::InvalidArgument, "adaptive_delay.fill = " + std::to_string(a.fill) + " is outside (0, 4]"};
    return Status::ok();
}

Status validateSlo(const SloControllerConfig &c)
{
    if (Status s = durationRange("slo.p99_target", c.p99Target, std::chrono::microseconds(1), std::chrono::seconds(60));
        !s)
        return s;
    if (c.minBatch < 1 || c.minBatch > kMaxBatch)
        return outOfRange("slo.min_batch", c.minBatch, 1, kMaxBatch);
    if (c.maxBatch < c.minBatch || c.maxBatch > kMaxBatch)
        return outOfRange("slo.max_batch", c.maxBatch, c.minBatch, kMaxBatch);
    if (Status s = durationRange("slo.max_delay", c.maxDelay, Duration::zero(), kMaxDelay); !s)
        return s;
    if (Status s = durationRange("slo.min_delay", c.minDelay, Duration::zero(), c.maxDelay); !s)
        return s;
    if (Status s = durationRange("slo.period", c.period, std::chrono::milliseconds(100), std::chrono::seconds(600)); !s)
        return s;
    if (c.batchStep < 1 || c.batchStep > kMaxBatch)
        return outOfRange("slo.batch_step", c.batchStep, 1, kMaxBatch);
    if (Status s = durationRange("slo.delay_step", c.delayStep, Duration::zero(), kMaxDelay); !s)
        return s;
    if (!(c.decrease > 0 && c.decrease < 1))
        return {StatusCode::InvalidArgument, "slo.decrease = " + std::to_string(c.decrease) + " is outside (0, 1)"};
    return Status::ok();
}

Status validateHybrid(const HybridConfig &h)
{
    if (h.staticSizes.empty() || h.staticSizes.size() > 8)
        return {StatusCode::InvalidArgument,
                "hybrid.static_sizes needs 1 to 8 sizes, got " + std::to_string(h.staticSizes.size())};
    for (std::size_t i = 0; i < h.staticSizes.size(); ++i) {
        if (h.staticSizes[i] < 1 || h.staticSizes[i] > kMaxBatch)
            return outOfRange("hybrid.static_sizes[" + std::to_string(i) + "]", h.staticSizes[i], 1, kMaxBatch);
        if (i > 0 && h.staticSizes[i] <= h.staticSizes[i - 1])
            return {StatusCode::InvalidArgument, "hybrid.static_sizes must be strictly increasing: " +
                                                     joinEdges(h.staticSizes)};
    }
    if (h.maxStaticLength < 1 || h.maxStaticLength > kMaxLength)
        return outOfRange("hybrid.max_static_length", h.maxStaticLength, 1, kMaxLength);
    if (!(h.minStaticRate >= 0 && h.minStaticRate <= 1e7))
        return {StatusCode::InvalidArgument, "hybrid.min_static_rate is outside [0, 1e7]"};
    return durationRange("hybrid.static_max_wait", h.staticMaxWait, Duration::zero(), kMaxDelay);
}

} // namespace

std::string_view policyName(PolicyKind kind)
{
    switch (kind) {
    case PolicyKind::None: return "none";
    case PolicyKind::Static: return "static";
    case PolicyKind::Dynamic: return "dynamic";
    case PolicyKind::Bucketed: return "bucketed";
    case PolicyKind::Hybrid: return "hybrid";
    }
    return "unknown";
}

std::optional<PolicyKind> parsePolicy(std::string_view name)
{
    for (auto k : {PolicyKind::None, PolicyKind::Static, PolicyKind::Dynamic, PolicyKind::Bucketed,
                   PolicyKind::Hybrid})
        if (policyName(k) == name)
            return k;
    return std::nullopt;
}

int BatchingConfig::queueCount() const
{
    switch (policy) {
    case PolicyKind::Bucketed: return int(bucketEdges.size()) + 1;
    case PolicyKind::Hybrid: return int(hybrid.staticSizes.size()) + 1;
    default: return 1;
    }
}

int BatchingConfig::bucketFor(int length) const
{
    if (policy == PolicyKind::Hybrid)
        return int(hybrid.staticSizes.size());
    if (policy != PolicyKind::Bucketed)
        return 0;
    auto it = std::lower_bound(bucketEdges.begin(), bucketEdges.end(), length);
    return int(it - bucketEdges.begin());
}

std::string BatchingConfig::queueName(int q) const
{
    if (policy == PolicyKind::Hybrid) {
        if (q >= 0 && q < int(hybrid.staticSizes.size()))
            return "static-" + std::to_string(hybrid.staticSizes[std::size_t(q)]);
        return "dynamic";
    }
    if (policy != PolicyKind::Bucketed)
        return "all";
    if (q <= 0)
        return "≤" + std::to_string(bucketEdges.front());
    if (q >= int(bucketEdges.size()))
        return ">" + std::to_string(bucketEdges.back());
    return std::to_string(bucketEdges[std::size_t(q - 1)] + 1) + "–" + std::to_string(bucketEdges[std::size_t(q)]);
}

Status validate(const BatchingConfig &c)
{
    if (c.maxBatchSize < 1 || c.maxBatchSize > kMaxBatch)
        return outOfRange("max_batch_size", c.maxBatchSize, 1, kMaxBatch);
    if (c.maxQueueDelay < Duration::zero() || c.maxQueueDelay > kMaxDelay)
        return {StatusCode::InvalidArgument, "max_queue_delay = " + formatDuration(c.maxQueueDelay) +
                                                 " is outside [0, 10s]"};
    if (c.staticBatchSize < 1 || c.staticBatchSize > kMaxBatch)
        return outOfRange("static_batch_size", c.staticBatchSize, 1, kMaxBatch);
    if (c.staticPaddedLength < 1 || c.staticPaddedLength > kMaxLength)
        return outOfRange("static_padded_length", c.staticPaddedLength, 1, kMaxLength);
    if (c.bucketEdges.empty() || int(c.bucketEdges.size()) > kMaxEdges)
        return {StatusCode::InvalidArgument, "bucket_edges needs 1 to " + std::to_string(kMaxEdges) +
                                                 " edges, got " + std::to_string(c.bucketEdges.size())};
    for (size_t i = 0; i < c.bucketEdges.size(); ++i) {
        const int e = c.bucketEdges[i];
        if (e < 1 || e > kMaxLength)
            return outOfRange("bucket_edges[" + std::to_string(i) + "]", e, 1, kMaxLength);
        if (i > 0 && e <= c.bucketEdges[i - 1])
            return {StatusCode::InvalidArgument, "bucket_edges must be strictly increasing: " +
                                                     joinEdges(c.bucketEdges)};
    }
    if (c.queueCapacity < 1 || c.queueCapacity > kMaxQueue)
        return outOfRange("queue_capacity", c.queueCapacity, 1, kMaxQueue);
    if (c.instances < 1 || c.instances > kMaxInstances)
        return outOfRange("instances", c.instances, 1, kMaxInstances);
    if (c.memoryBatchLimit < 0 || c.memoryBatchLimit > kMaxBatch)
        return outOfRange("memory_batch_limit", c.memoryBatchLimit, 0, kMaxBatch);
    if (c.priorityAging < std::chrono::milliseconds(1) || c.priorityAging > std::chrono::seconds(60))
        return {StatusCode::InvalidArgument,
                "priority_aging = " + formatDuration(c.priorityAging) + " is outside [1ms, 60s]"};
    if (Status s = validateAdaptive(c.adaptiveDelay); !s)
        return s;
    if (Status s = validateSlo(c.slo); !s)
        return s;
    if (Status s = validateHybrid(c.hybrid); !s)
        return s;
    const CacheConfig &k = c.cache;
    if (k.maxEntries < 1 || k.maxEntries > 10'000'000)
        return outOfRange("cache.max_entries", k.maxEntries, 1, 10'000'000);
    if (k.maxBytes < 1024 || k.maxBytes > (16LL << 30))
        return outOfRange("cache.max_bytes", k.maxBytes, 1024, 16LL << 30);
    return Status::ok();
}

std::string formatDuration(Duration d)
{
    const double ns = double(d.count());
    char buf[32];
    if (ns == 0)
        return "0";
    if (ns < 1e3)
        std::snprintf(buf, sizeof buf, "%gns", ns);
    else if (ns < 1e6)
        std::snprintf(buf, sizeof buf, "%gµs", ns / 1e3);
    else if (ns < 1e9)
        std::snprintf(buf, sizeof buf, "%gms", ns / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%gs", ns / 1e9);
    return buf;
}

std::string describeChange(const BatchingConfig &a, const BatchingConfig &b)
{
    std::string out;
    auto add = [&](std::string_view field, const std::string &from, const std::string &to) {
        if (from == to)
            return;
        if (!out.empty())
            out += ", ";
        out += field;
        out += ' ';
        out += from;
        out += "→";
        out += to;
    };
    auto str = [](auto v) { return std::to_string(v); };
    add("policy", std::string(policyName(a.policy)), std::string(policyName(b.policy)));
    add("max_batch_size", str(a.maxBatchSize), str(b.maxBatchSize));
    add("max_queue_delay", formatDuration(a.maxQueueDelay), formatDuration(b.maxQueueDelay));
    add("static_batch_size", str(a.staticBatchSize), str(b.staticBatchSize));
    add("static_padded_length", str(a.staticPaddedLength), str(b.staticPaddedLength));
    add("static_flush_on_drain", a.staticFlushOnDrain ? "true" : "false",
        b.staticFlushOnDrain ? "true" : "false");
    add("bucket_edges", joinEdges(a.bucketEdges), joinEdges(b.bucketEdges));
    add("queue_capacity", str(a.queueCapacity), str(b.queueCapacity));
    add("instances", str(a.instances), str(b.instances));
    add("memory_batch_limit", str(a.memoryBatchLimit), str(b.memoryBatchLimit));
    add("priority_aging", formatDuration(a.priorityAging), formatDuration(b.priorityAging));
    auto onOff = [](bool v) { return std::string(v ? "on" : "off"); };
    auto fl = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", v);
        return std::string(buf);
    };
    const auto &aa = a.adaptiveDelay, &ba = b.adaptiveDelay;
    add("adaptive_delay", onOff(aa.enabled), onOff(ba.enabled));
    add("adaptive_delay.min_delay", formatDuration(aa.minDelay), formatDuration(ba.minDelay));
    add("adaptive_delay.max_delay", formatDuration(aa.maxDelay), formatDuration(ba.maxDelay));
    add("adaptive_delay.period", formatDuration(aa.period), formatDuration(ba.period));
    add("adaptive_delay.fill", fl(aa.fill), fl(ba.fill));
    const auto &as = a.slo, &bs = b.slo;
    add("slo", onOff(as.enabled), onOff(bs.enabled));
    add("slo.p99_target", formatDuration(as.p99Target), formatDuration(bs.p99Target));
    add("slo.min_batch", str(as.minBatch), str(bs.minBatch));
    add("slo.max_batch", str(as.maxBatch), str(bs.maxBatch));
    add("slo.min_delay", formatDuration(as.minDelay), formatDuration(bs.minDelay));
    add("slo.max_delay", formatDuration(as.maxDelay), formatDuration(bs.maxDelay));
    add("slo.period", formatDuration(as.period), formatDuration(bs.period));
    add("slo.batch_step", str(as.batchStep), str(bs.batchStep));
    add("slo.delay_step", formatDuration(as.delayStep), formatDuration(bs.delayStep));
    add("slo.decrease", fl(as.decrease), fl(bs.decrease));
    const auto &ah = a.hybrid, &bh = b.hybrid;
    add("hybrid.static_sizes", joinEdges(ah.staticSizes), joinEdges(bh.staticSizes));
    add("hybrid.max_static_length", str(ah.maxStaticLength), str(bh.maxStaticLength));
    add("hybrid.min_static_rate", fl(ah.minStaticRate), fl(bh.minStaticRate));
    add("hybrid.static_max_wait", formatDuration(ah.staticMaxWait), formatDuration(bh.staticMaxWait));
    add("cache", onOff(a.cache.enabled), onOff(b.cache.enabled));
    add("cache.max_entries", str(a.cache.maxEntries), str(b.cache.maxEntries));
    add("cache.max_bytes", str(a.cache.maxBytes), str(b.cache.maxBytes));
    return out;
}

} // namespace bp
