#include "engine/sim/simulation/router.h"

#include <algorithm>
#include <cmath>

namespace bp {

namespace {

// splitmix64: a cheap, well-mixed 64-bit hash step.
std::uint64_t mix(std::uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

bool allowed(std::span<const bool> eligible, std::size_t i)
{
    return eligible.empty() || eligible[i];
}

} // namespace

std::optional<RouterPolicy> parseRouterPolicy(std::string_view name)
{
    for (RouterPolicy p : kRouterPolicies)
        if (routerPolicyName(p) == name)
            return p;
    return std::nullopt;
}

std::string_view routerPolicyName(RouterPolicy policy)
{
    switch (policy) {
    case RouterPolicy::RoundRobin: return "round-robin";
    case RouterPolicy::LeastOutstanding: return "least-outstanding";
    case RouterPolicy::LeastKv: return "least-kv";
    case RouterPolicy::PrefixAffinity: return "prefix-affinity";
    }
    return "round-robin";
}

Router::Router(RouterOptions options) : m_options(options)
{
    m_options.replicas = std::max(1, m_options.replicas);
    m_options.virtualNodes = std::max(1, m_options.virtualNodes);
    m_options.loadBound = std::max(0.0, m_options.loadBound);
    if (m_options.policy == RouterPolicy::PrefixAffinity) {
        m_ring.reserve(std::size_t(m_options.replicas) * std::size_t(m_options.virtualNodes));
        for (int r = 0; r < m_options.replicas; ++r)
            for (int v = 0; v < m_options.virtualNodes; ++v)
                m_ring.emplace_back(mix((std::uint64_t(r) << 32) ^ std::uint64_t(v) ^ 0x5bd1e995u), r);
        std::sort(m_ring.begin(), m_ring.end());
    }
}

int Router::owner(std::uint64_t prefixKey) const
{
    if (m_ring.empty())
        return 0;
    const std::uint64_t point = mix(prefixKey);
    auto it = std::lower_bound(m_ring.begin(), m_ring.end(), std::pair<std::uint64_t, int>(point, -1));
    if (it == m_ring.end())
        it = m_ring.begin(); // the ring wraps
    return it->second;
}

int Router::leastOutstanding(std::span<const ReplicaLoad> loads, std::span<const bool> eligible) const
{
    int best = -1;
    for (std::size_t i = 0; i < loads.size(); ++i)
        if (allowed(eligible, i) && (best < 0 || loads[i].outstanding < loads[std::size_t(best)].outstanding))
            best = int(i);
    return std::max(best, 0);
}

int Router::route(std::uint64_t prefixKey, std::span<const ReplicaLoad> loads, std::span<const bool> eligible)
{
    ++m_counters.routed;
    const int n = int(loads.size());
    if (n <= 1)
        return 0;
    switch (m_options.policy) {
    case RouterPolicy::RoundRobin:
        for (int k = 0; k < n; ++k) {
            const int r = (m_next + k) % n;
            if (allowed(eligible, std::size_t(r))) {
                m_next = (r + 1) % n;
                return r;
            }
        }
        return 0;
    case RouterPolicy::LeastOutstanding: return leastOutstanding(loads, eligible);
    case RouterPolicy::LeastKv: {
        int best = -1;
        for (std::size_t i = 0; i < loads.size(); ++i) {
            if (!allowed(eligible, i))
                continue;
            const ReplicaLoad &l = loads[i];
            if (best < 0)
                best = int(i);
            const ReplicaLoad &b = loads[std::size_t(best)];
            if (l.kvTokens < b.kvTokens || (l.kvTokens == b.kvTokens && l.outstanding < b.outstanding))
                best = int(i);
        }
        return std::max(best, 0);
    }
    case RouterPolicy::PrefixAffinity: {
        if (prefixKey == 0)
            return leastOutstanding(loads, eligible);
        const int o = owner(prefixKey);
        std::int64_t total = 0;
        for (const ReplicaLoad &l : loads)
            total += l.outstanding;
        const auto bound =
            std::int64_t(std::ceil((1.0 + m_options.loadBound) * double(total + 1) / double(n)));
        if (o < n && allowed(eligible, std::size_t(o)) && loads[std::size_t(o)].outstanding + 1 <= bound) {
            ++m_counters.affinity;
            return o;
        }
        ++m_counters.spilled;
        return leastOutstanding(loads, eligible);
    }
    }
    return 0;
}

std::uint64_t prefixKeyOf(std::span<const std::int64_t> hashIds, int blocks)
{
    const std::size_t n = std::min(hashIds.size(), std::size_t(std::max(1, blocks)));
    if (n == 0)
        return 0;
    std::uint64_t h = 0x243f6a8885a308d3ull;
    for (std::size_t i = 0; i < n; ++i)
        h = mix(h ^ std::uint64_t(hashIds[i]));
    return h | 1; // never 0 (0 = no key)
}

std::uint64_t prefixKeyOfTokens(std::span<const TokenId> tokens, int blocks)
{
    const std::size_t want = std::size_t(std::max(1, blocks)) * kRouteBlockTokens;
    const std::size_t n = std::min(tokens.size(), want) / kRouteBlockTokens * kRouteBlockTokens;
    if (n == 0)
        return 0;
    std::uint64_t h = 0x13198a2e03707344ull;
    for (std::size_t i = 0; i < n; ++i)
        h = mix(h ^ std::uint64_t(std::uint32_t(tokens[i])));
    return h | 1;
}

} // namespace bp
