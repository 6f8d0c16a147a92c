// One request's way to a remote server (http_remote_target.h): the request
// waiting for a connection, the POST its protocol asks for (route, headers,
// body, timeout), and what comes back of a streamed answer while it streams.
//
// Threading: the remote target's HTTP thread.
#pragma once

#include "http1_connection.h"
#include "remote_codec.h"
#include "remote_options.h"

#include "engine/core/request.h"

#include <QByteArray>
#include <QList>
#include <QPair>

#include <memory>

namespace bp::remote {

// A submitted request, from submit() until its completion runs.
struct PendingRequest {
    Request request;
    Completion done;
    int replica = -1; // the pool it was routed to (-1: not routed, cancelled first)
    int tokens = 0;   // its prompt's length when routed
};

// A request on the wire: when it went out and its streamed answer so far.
struct InFlightRequest {
    PendingRequest p;
    TimePoint sentAt{};
    SseReader sse;
    QByteArray errorBody; // the first KiBs of a streamed answer, for its error text
};

// The exchanges of one remote target: the headers are the same for every
// request (JSON in, JSON or server-sent events out, the bearer token).
class ExchangeBuilder {
public:
    explicit ExchangeBuilder(const RemoteOptions &options);

    // The POST of `f`'s request to `route`; a streamed answer's pieces are
    // fed to `f` as they arrive (the exchange keeps it alive).
    HttpExchange build(const QByteArray &route, const std::shared_ptr<InFlightRequest> &f) const;

private:
    Protocol m_protocol;
    QString m_model;
    ServerDialect m_dialect;
    Duration m_timeout;
    QList<QPair<QByteArray, QByteArray>> m_headers;
};

} // namespace bp::remote
