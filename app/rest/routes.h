// The endpoint's route table as a pure function of (path, method), so 404
// versus 405 (with the Allow header) is decided in one place and tested
// without a socket.
//
//   GET  /v2/health/live                       GET  /v1/config, PUT /v1/config
//   GET  /v2/health/ready                      GET  /v1/stats
//   GET  /v2                                   GET  /metrics
//   GET  /v2/models/{name}[/versions/{v}]      POST /v1/infer
//   GET  /v2/models/{name}[/versions/{v}]/ready
//   POST /v2/models/{name}[/versions/{v}]/infer
//   GET  /v1/sessions/{id}/report?format=html|pdf|json
//
// OpenAI-compatible: GET /v1/models, GET /v1/models/{id},
//   POST /v1/completions, POST /v1/chat/completions
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
    ChatCompletions,
    ListModels,
    GetModel,
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

// Which API a route belongs to: each has its own handler (v1_api.h,
// oip_api.h, openai_api.h).
enum class Api { Oip, V1, OpenAi };
Api apiOf(Route route);

// True for the OpenAI routes' paths (/v1/models[/...], /v1/completions,
// /v1/chat/completions), whatever the method: every error answered on them
// is an OpenAI error object (http_reply.h, ErrorStyle::OpenAi).
bool isOpenAiPath(const QString &path);

RouteMatch matchRoute(const QString &path, QHttpServerRequest::Method method);

// Health routes answer without a token (load balancers and probes).
bool isHealthRoute(Route route);

} // namespace bp::rest
