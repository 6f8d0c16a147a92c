// A remote server's kind and current settings, read over HTTP before a
// remote calibration probes it (engine/sim/calibration/remote_settings.h parses what
// comes back):
//
//   vllm        GET /metrics (vllm:cache_config_info) + GET /v1/models
//   tgi         GET /info (+ /metrics tgi_batch_max_total_tokens)
//   triton      GET /v2/models/NAME/config
//   sglang      GET /get_server_info (else /server_info) + GET /v1/models
//   batchpilot  GET /v1/config + GET /v1/models
//   llamacpp    GET /props + GET /slots
//
// The kind comes from the operator (--server) or, for `auto`, from the
// series names of /metrics (engine/telemetry/target_metrics.h detectServer),
// else from the routes a server answers (detectFromRoutes: llama-server's
// GET /props).
//
// Threading: blocks the calling thread and runs a local event loop on it
// (a QCoreApplication must exist).
#pragma once

#include "remote_options.h"

#include "engine/core/result.h"
#include "engine/sim/calibration/remote_settings.h"

#include <QByteArray>

#include <optional>
#include <string>

namespace bp::remote {

struct HttpGet {
    int status = 0; // 0: no answer (see error)
    QByteArray body;
    QString error;
};
// GET `url` (absolute), with the bearer token when given.
HttpGet httpGet(const QUrl &url, const QString &token, Duration timeout = std::chrono::seconds(10));
// `method` `url` with a JSON `body` (PUT /v1/config).
HttpGet httpSend(const QUrl &url, const QByteArray &method, const QByteArray &body, const QString &token,
                 Duration timeout = std::chrono::seconds(10));
// `route` under the target's base path ("/v1/config").
QUrl routeUrl(const QUrl &target, const QString &route);

// GET `url` and parse the body as a Prometheus exposition. The error says
// what failed without the URL: the transport's error or "HTTP 503"
// (Unavailable), or the parser's (InvalidArgument).
Result<prom::Exposition> getExposition(const QUrl &url, const QString &token,
                                       Duration timeout = std::chrono::seconds(10));
// The server's /metrics (options.metricsUrl, else TARGET's origin + /metrics),
// parsed; an error names what failed.
Result<prom::Exposition> scrapeOnce(const RemoteOptions &options);

// The settings of a `server` server, read where it publishes them;
// NotFound for a kind whose settings are not read (an unrecognised one),
// else the error of the route that failed.
Result<ServerSettings> fetchServerSettings(const RemoteOptions &options, const std::string &server,
                                           const prom::Exposition *metrics);

// The kind a server's own routes show when its /metrics does not: "llamacpp"
// for an answer to GET /props that is llama-server's; else empty.
std::string detectFromRoutes(const RemoteOptions &options);
// The server's kind from its /metrics, else its routes; empty when neither
// names it. `from`: where it was read ("/metrics", "GET /props").
std::string detectKind(const RemoteOptions &options, std::string &from);

} // namespace bp::remote
