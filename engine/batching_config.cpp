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
} // namespace

std::string_view policyName(PolicyKind kind)
{
    switch (kind) {
    case PolicyKind::None: return "none";
    case PolicyKind::Static: return "static";
    case PolicyKind::Dynamic: return "dynamic";
    case PolicyKind::Bucketed: return "bucketed";
    }
    return "unknown";
}

std::optional<PolicyKind> parsePolicy(std::string_view name)
{
    for (auto k : {PolicyKind::None, PolicyKind::Static, PolicyKind::Dynamic, PolicyKind::Bucketed})
        if (policyName(k) == name)
            return k;
    return std::nullopt;
}

int BatchingConfig::queueCount() const
{
    return policy == PolicyKind::Bucketed ? int(bucketEdges.size()) + 1 : 1;
}

int BatchingConfig::bucketFor(int length) const
{
    if (policy != PolicyKind::Bucketed)
        return 0;
    auto it = std::lower_bound(bucketEdges.begin(), bucketEdges.end(), length);
    return int(it - bucketEdges.begin());
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
    return out;
}

} // namespace bp
