#include "remote_pool.h"

namespace bp::remote {

ConnectionPool::ConnectionPool(const QUrl &url, const QByteArray &route)
    : m_endpoint(endpointOf(url)), m_route(basePathOf(url) + route)
{
}

Http1Connection *ConnectionPool::take(int maxConcurrency, QObject *parent)
{
    if (!m_idle.empty()) {
        Http1Connection *c = m_idle.back();
        m_idle.pop_back();
        return c;
    }
    if (int(m_connections.size()) >= maxConcurrency)
        return nullptr;
    auto *c = new Http1Connection(m_endpoint, parent);
    m_connections.push_back(c);
    return c;
}

void ConnectionPool::abortBusy(const QString &reason)
{
    for (Http1Connection *c : m_connections)
        if (c->busy())
            c->abort(reason);
}

void ConnectionPool::close()
{
    m_idle.clear();
    const std::vector<Http1Connection *> connections = std::move(m_connections);
    m_connections.clear();
    for (Http1Connection *c : connections)
        delete c;
}

} // namespace bp::remote
