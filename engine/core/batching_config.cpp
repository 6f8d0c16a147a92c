#include "batching_config.h"

#include <algorithm>
#include <cstdio>

namespace bp {

std::string_view policyName(PolicyKind kind)
{
    switch (kind) {
    case PolicyKind::None: return "none";
    case PolicyKind::Static: return "static";
    case PolicyKind::Dynamic: return "dynamic";
    case PolicyKind::Bucketed: return "bucketed";
    case PolicyKind::Hybrid: return "hybrid";
    case PolicyKind::Continuous: return "continuous";
    }
    return "unknown";
}

std::optional<PolicyKind> parsePolicy(std::string_view name)
{
    for (auto k : {PolicyKind::None, PolicyKind::Static, PolicyKind::Dynamic, PolicyKind::Bucketed,
                   PolicyKind::Hybrid, PolicyKind::Continuous})
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
    return std::to_string(bucketEdges[std::size_t(q - 1)] + 1) + "–" +
           std::to_string(bucketEdges[std::size_t(q)]);
}

bool GoodputConfig::met(Duration firstToken, Duration perToken, Duration endToEnd) const
{
    if (ttft > Duration::zero() && (firstToken <= Duration::zero() || firstToken > ttft))
        return false;
    if (tpot > Duration::zero() && perToken > tpot)
        return false;
    return e2e <= Duration::zero() || endToEnd <= e2e;
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

} // namespace bp
