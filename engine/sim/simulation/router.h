// The fleet's router: which of N replicas serves a request. A
// policy object only — no queue, no clock, no threads — so that the
// simulator (simulator.h, SimulatorOptions::replicas) and a client-side
// router in front of real servers decide alike.
//
// Policies:
//  - round-robin: replicas in turn;
//  - least-outstanding: the replica with the fewest requests routed to it
//    and not yet ended (ties: the lowest index);
//  - least-kv: the replica with the fewest tokens in its KV cache (the
//    continuous scheduler's live sequences; ties by outstanding, then
//    index). A replica without a KV cache (request-level policies) reports 0,
//    and this becomes least-outstanding;
//  - prefix-affinity: consistent hashing of the request's prefix key (the
//    first prompt blocks, prefixKeyOf()) onto a ring of virtual nodes, so a
//    shared system prompt keeps landing on the replica that has it cached;
//    with a load bound as in "consistent hashing with bounded loads"
//    (Mirrokni, Thorup, Zadimoghaddam 2018): when the chosen replica's
//    outstanding count would pass ceil((1 + ε) · (total + 1) / N), the
//    request goes to the least-outstanding replica instead. A request
//    without a key (0) goes to the least-outstanding replica.
// Affinity pays only where a replica reuses a cached prefix (a prefix cache
// in the scheduler); without one it is load-balanced hashing.
//
// Not thread-safe: one router per caller thread (route() advances
// round-robin's cursor and the counters).
#pragma once

#include "engine/core/request.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bp {

enum class RouterPolicy { RoundRobin, LeastOutstanding, LeastKv, PrefixAffinity };
// "round-robin", "least-outstanding", "least-kv", "prefix-affinity"; nullopt otherwise.
std::optional<RouterPolicy> parseRouterPolicy(std::string_view name);
std::string_view routerPolicyName(RouterPolicy policy);
inline constexpr RouterPolicy kRouterPolicies[] = {RouterPolicy::RoundRobin, RouterPolicy::LeastOutstanding,
                                                   RouterPolicy::LeastKv, RouterPolicy::PrefixAffinity};

// What the router sees of one replica when it decides.
struct ReplicaLoad {
    int outstanding = 0;       // routed to it, not yet ended
    std::int64_t kvTokens = 0; // tokens in its KV cache (0 without one)
};

struct RouterOptions {
    RouterPolicy policy = RouterPolicy::LeastOutstanding;
    int replicas = 1;
    double loadBound = 0.25; // prefix-affinity's ε: outstanding <= ceil((1 + ε)·(total + 1)/N)
    int virtualNodes = 64;   // prefix-affinity: points per replica on the ring
};

class Router {
public:
    explicit Router(RouterOptions options);

    const RouterOptions &options() const { return m_options; }
    // The replica for a request with this prefix key (0: none), given every
    // replica's load (loads.size() == replicas). A replica with
    // `eligible[i] == false` (when given) is never chosen; at least one must be.
    int route(std::uint64_t prefixKey, std::span<const ReplicaLoad> loads,
              std::span<const bool> eligible = {});
    // prefix-affinity: where a key hashes to, before the load bound.
    int owner(std::uint64_t prefixKey) const;

    struct Counters {
        std::uint64_t routed = 0;
        std::uint64_t affinity = 0; // prefix-affinity: sent to the key's owner
        std::uint64_t spilled = 0;  // prefix-affinity: the owner was over its bound
    };
    const Counters &counters() const { return m_counters; }

private:
    int leastOutstanding(std::span<const ReplicaLoad> loads, std::span<const bool> eligible) const;

    RouterOptions m_options;
    std::vector<std::pair<std::uint64_t, int>> m_ring; // (point, replica), sorted by point
    int m_next = 0;
    Counters m_counters;
};

// Prefix blocks of this many tokens form a request's routing key.
inline constexpr int kRouteBlockTokens = 16;
// The routing key of a prompt: a hash of its first `blocks` prefix-block
// ids (a trace's hash_ids), or of its first blocks·kRouteBlockTokens token
// ids; 0 when there are none (a prompt shorter than one block has no key).
std::uint64_t prefixKeyOf(std::span<const std::int64_t> hashIds, int blocks = 1);
std::uint64_t prefixKeyOfTokens(std::span<const TokenId> tokens, int blocks = 1);

} // namespace bp
