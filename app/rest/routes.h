// The endpoint's route table as a pure function of (path, method), so 404
// versus 405 (with the Allow header) is decided in one place and tested
// without a socket.
//
//   GET  /v2/health/live                       GET  /v1/config, PUT /v1/config
//   GET  /v2/health/ready                      GET  /v1/stats
//   GET  /v2                                   GET  /metrics
//   GET  /v2/models/{name}[/versions/{v}]      POST /v1/infer
//                                              POST /v1/completions (OpenAI)
//   GET  /v2/models/{name}[/versions/{v}]/ready
//   POST /v2/models/{name}[/versions/{v}]/infer
//   GET  /v1/sessions/{id}/report?format=html|pdf|json
#pragma once

#include <QByteArray>
#include <QHttpServerRequest>
#include <QString>

#include <optional>

namespace bp::rest {

enum class Route {
    HealthLive,
    HealthReady,
    ServerMetadata,
    ModelMetadata,
    ModelReady,
    OipInfer,
    V1Infer,
    Completions,
    GetConfig,
    PutConfig,
    Stats,
    Metrics,
    SessionReport,
};

struct RouteMatch {
    std::optional<Route> route; // set when path and method match
    bool pathKnown = false;     // path matches but the method does not -> 405
    QByteArray allow;           // for 405: "GET, PUT"
    QString model;              // {name} of /v2/models/...
    QString version;            // {v} of .../versions/{v}, empty when absent
    QString session;            // {id} of /v1/sessions/{id}/report, as given
};

RouteMatch matchRoute(const QString &path, QHttpServerRequest::Method method);

// Health routes answer without a token (load balancers and probes).
bool isHealthRoute(Route route);

} // namespace bp::rest
