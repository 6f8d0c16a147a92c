// One URL's connections of a remote target (http_remote_target.h) and the
// requests routed to it that wait for one: keep-alive connections reused
// while idle, a new one opened while fewer than the cap are open, the rest
// in a FIFO (the client's queue_wait).
//
// Threading: the remote target's HTTP thread.
#pragma once

#include "http1_connection.h"
#include "remote_exchange.h"

#include <QUrl>

#include <deque>
#include <vector>

namespace bp::remote {

class ConnectionPool {
public:
    // `route`: the protocol's route, appended to the URL's base path.
    ConnectionPool(const QUrl &url, const QByteArray &route);

    const QByteArray &route() const { return m_route; }
    std::deque<PendingRequest> &queue() { return m_queue; }
    const std::deque<PendingRequest> &queue() const { return m_queue; }
    std::size_t opened() const { return m_connections.size(); }

    // An idle connection, else a new one (a child of `parent`, which deletes
    // it unless close() does first) while fewer
    // than `maxConcurrency` are open; null when all are busy.
    Http1Connection *take(int maxConcurrency, QObject *parent);
    // `c` answered and may carry the next request.
    void giveBack(Http1Connection *c) { m_idle.push_back(c); }
    // Fails the exchanges on the wire (each one's callback runs).
    void abortBusy(const QString &reason);
    // Deletes every connection; the pool keeps its queue.
    void close();

private:
    HttpEndpoint m_endpoint;
    QByteArray m_route;
    std::deque<PendingRequest> m_queue;
    std::vector<Http1Connection *> m_connections;
    std::vector<Http1Connection *> m_idle;
};

} // namespace bp::remote
