// The client-side router of a remote fleet (`replay
// --target URL1,URL2 --router P`): which server a request goes to, decided
// by the simulator's own Router (engine/sim/simulation/router.h) so that a measured
// fleet and `replay --simulate --replicas N --router P` route alike.
//
// The loads it routes on are the client's own, never the servers':
//  - outstanding: requests routed to a URL and not yet ended (waiting for a
//    connection in the client, on the wire, or answered but not recorded);
//  - least-kv's "KV tokens": the prompt tokens of those outstanding
//    requests (a client cannot see a server's KV cache; what it has sent
//    and not yet had answered is the closest figure it owns);
//  - prefix-affinity's key: prefixKeyOfTokens() of the prompt, its first
//    kRouteBlockTokens token ids (what a router in front of real servers
//    sees: the prompt, not a trace's hash ids). A trace's prompts begin
//    with their first prefix block's tokens (prefix_tokens.h), so prompts
//    that share a first block share a key, as in the simulator.
//
// Threading: lives on the remote target's HTTP thread; every call there.
#pragma once

#include "engine/core/request.h"
#include "engine/sim/simulation/router.h"

#include <nlohmann/json.hpp>

#include <QList>
#include <QUrl>

#include <vector>

namespace bp::remote {

class ClientRouter {
public:
    ClientRouter(RouterOptions options, QList<QUrl> urls);

    int replicas() const { return int(m_replicas.size()); }
    // The replica for `request`, counted as outstanding there from now.
    int route(const Request &request);
    // A request routed to `replica` ended (answered, failed or shed).
    void ended(int replica, int inputTokens, bool ok, int outputTokens);

    struct Replica {
        QUrl url;
        std::uint64_t routed = 0, completed = 0, failed = 0, outputTokens = 0;
        int outstanding = 0, peakOutstanding = 0;
        std::int64_t outstandingTokens = 0, peakTokens = 0;
    };
    const std::vector<Replica> &figures() const { return m_replicas; }
    const Router::Counters &counters() const { return m_router.counters(); }
    // {"router", "replicas": [{replica, url, routed, completed, failed,
    //  peak_outstanding, peak_kv_tokens, output_tokens}], "affinity_routed",
    //  "affinity_spilled", "load_bound"}: stored as the session's "fleet".
    nlohmann::json json() const;

private:
    Router m_router;
    std::vector<Replica> m_replicas;
    std::vector<ReplicaLoad> m_loads;
};

} // namespace bp::remote
