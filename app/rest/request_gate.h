// Routing and authentication: everything decided about a request before an
// API handler sees it, in this order:
//   body over the limit (the connection guard stops these earlier) -> 413
//   no token configured and a Host that is not this server     -> 403
//   a route that needs the token, without the right one        -> 401
//   no route for the path (404) or not for the method (405 + Allow)
//   a model name (/v2/models/{name}, /v1/models/{id}) this server does not
//   serve, or a version other than 1                            -> 404
//   inference or a config change while draining                 -> 503
// A pure decision over the request's fields (no socket, no engine): the
// frontend writes the refusal or hands the match to the route's API.
#pragma once

#include "http_reply.h"
#include "rest_options.h"
#include "routes.h"

#include "engine/model/backend.h"

#include <QHostAddress>
#include <QHttpServerRequest>

#include <optional>

namespace bp::rest {

class RequestGate {
public:
    // `model` must outlive the gate (the engine's).
    RequestGate(const RestOptions &options, const ModelInfo &model);

    struct Decision {
        RouteMatch match;                 // match.route is set when the request may go on
        std::optional<HttpReply> refusal; // set when it may not
    };
    // `path` is request.url().path() (the caller has it already).
    Decision check(const QHttpServerRequest &request, const QString &path, bool draining) const;

    // The bearer token matches (or none is configured); constant time.
    bool authorized(const QHttpServerRequest &request) const;

private:
    const ModelInfo &m_model;
    const std::int64_t m_maxBodyBytes;
    const QByteArray m_expectedAuthorization; // "Bearer <token>", empty when no token
    // Without a token, only requests whose Host names this address or a
    // loopback name are served (DNS-rebinding protection, docs/rest.md).
    const QHostAddress m_boundAddress;
};

} // namespace bp::rest
