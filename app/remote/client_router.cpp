#include "client_router.h"

#include <algorithm>

namespace bp::remote {

ClientRouter::ClientRouter(RouterOptions options, QList<QUrl> urls)
    : m_router([&] {
          options.replicas = int(urls.size());
          return options;
      }())
{
    for (QUrl &url : urls)
        m_replicas.push_back(Replica{std::move(url)});
    m_loads.resize(m_replicas.size());
}

int ClientRouter::route(const Request &request)
{
    for (std::size_t i = 0; i < m_replicas.size(); ++i)
        m_loads[i] = {m_replicas[i].outstanding, m_replicas[i].outstandingTokens};
    const int k = m_router.route(prefixKeyOfTokens(request.tokens), m_loads);
    Replica &r = m_replicas[std::size_t(k)];
    ++r.routed;
    r.peakOutstanding = std::max(r.peakOutstanding, ++r.outstanding);
    r.outstandingTokens += std::int64_t(request.tokens.size());
    r.peakTokens = std::max(r.peakTokens, r.outstandingTokens);
    return k;
}

void ClientRouter::ended(int replica, int inputTokens, bool ok, int outputTokens)
{
    if (replica < 0 || replica >= replicas())
        return;
    Replica &r = m_replicas[std::size_t(replica)];
    --r.outstanding;
    r.outstandingTokens -= inputTokens;
    ++(ok ? r.completed : r.failed);
    r.outputTokens += std::uint64_t(std::max(0, outputTokens));
}

nlohmann::json ClientRouter::json() const
{
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < m_replicas.size(); ++i) {
        const Replica &r = m_replicas[i];
        rows.push_back({{"replica", i},
                        {"url", r.url.toString().toStdString()},
                        {"routed", r.routed},
                        {"completed", r.completed},
                        {"failed", r.failed},
                        {"peak_outstanding", r.peakOutstanding},
                        {"peak_kv_tokens", r.peakTokens},
                        {"output_tokens", r.outputTokens}});
    }
    return {{"router", std::string(routerPolicyName(m_router.options().policy))},
            {"replicas", m_replicas.size()},
            {"load_bound", m_router.options().loadBound},
            {"kv_load", "outstanding prompt tokens (client-side)"},
            {"affinity_routed", m_router.counters().affinity},
            {"affinity_spilled", m_router.counters().spilled},
            {"replica_figures", rows}};
}

} // namespace bp::remote
