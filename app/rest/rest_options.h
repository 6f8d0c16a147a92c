// How the REST endpoint listens and what it accepts. Built from the command
// line (AppOptions) by restOptionsFrom(); checked by checkRestOptions()
// before anything binds.
#pragma once

#include "app/app_options.h"
#include "engine/core/status.h"

#include <QHostAddress>
#include <QString>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

class QThreadPool;

namespace bp {
class TraceStore;
}
namespace bp::app {
class NvmlSampler;
}

namespace bp::rest {

struct RestOptions {
    // Address to bind. "localhost" means 127.0.0.1. Anything other than
    // 127.0.0.1 or ::1 needs a token -- other 127.x addresses too, since
    // containers and port forwarders may route them from outside.
    QString bind = QStringLiteral("127.0.0.1");
    quint16 port = 8321; // 0 = any free port
    // Bearer token. When set it is required on every route except
    // /v2/health/*; required (non-empty) when binding off loopback.
    QString token;
    // Requests whose declared body is larger are answered 413 as soon as
    // their headers arrive: the body is never buffered. Default 1 MiB.
    std::int64_t maxBodyBytes = 1 << 20;
    // Request line + headers larger than this are answered 431.
    int maxHeaderBytes = 64 * 1024;
    // Overload (docs/rest.md, "Under overload"). An inference request that
    // finds the engine's admission queue full (queue_capacity) waits on the
    // server thread, in arrival order, up to `admissionWait` for room; it
    // is submitted as soon as there is room, else answered 429 with
    // Retry-After. At most `maxWaitingRequests` wait; beyond that, 429 at
    // once, before the body is parsed. A client that retries at once is
    // thereby held to one attempt per admissionWait per connection,
    // instead of spinning the server thread (and starving the model) with
    // rejections. 0 ms = answer 429 at once, as the engine does.
    std::chrono::milliseconds admissionWait{500};
    int maxWaitingRequests = 1024;
    // Requests one connection may have unanswered (HTTP/1.1 pipelining).
    // The next one is answered 429 after the earlier answers, the
    // connection is closed, and nothing more is read from it.
    int maxPipelinedRequests = 32;
    // Session reports rendering or waiting to render; more get 429.
    int maxQueuedReports = 4;
    // Where reports render; null = a private pool of one thread. A pool
    // given here must outlive the server (tests pass one they can keep
    // busy).
    QThreadPool *reportPool = nullptr;
    // The trace sink's dropped-row count for /metrics
    // (batchpilot_trace_dropped_rows_total); unset = no sink, reported as 0.
    // Called on the server thread; must be thread-safe and cheap.
    std::function<std::uint64_t()> droppedTraceRows;
    // The trace database, for GET /v1/sessions/{id}/report; null = no
    // database (the route answers 503).
    std::shared_ptr<const TraceStore> store;
    // NVML for the GPU gauges (batchpilot_gpu_* in /metrics, "gpu" in
    // /v1/stats; gpu_gauges.h), sampled on the server thread every
    // `gpuSamplePeriod`. Null, or a sampler that is not available: the
    // gauges are absent. Handed to the server thread: the caller must not
    // use it once the server has started.
    std::shared_ptr<app::NvmlSampler> gpu;
    std::chrono::milliseconds gpuSamplePeriod{1000};
};

RestOptions restOptionsFrom(const app::AppOptions &options);

// The address `bind` names, or a null QHostAddress when it names none.
QHostAddress parseBindAddress(const QString &bind);

// 127.0.0.1 or ::1: the addresses served without a token.
bool isDefaultLoopback(const QHostAddress &address);

// DNS-rebinding protection for an endpoint served without a token: a web
// page can point a host name of its own at 127.0.0.1, and the browser then
// sends that name as Host. True when `host` (a Host header value, with or
// without ":port") names `bound` (the address the server listens on),
// `localhost`, `127.0.0.1` or `[::1]`; case-insensitive; an empty value
// (HTTP/1.0 clients; browsers always send one) is accepted.
bool isLocalHostHeader(const QByteArray &host, const QHostAddress &bound);

// OK, or InvalidArgument saying what is wrong (unparseable address, a
// non-loopback bind without a token, a body limit below 1 byte).
Status checkRestOptions(const RestOptions &options);

// "http://127.0.0.1:8321", "http://[::1]:8321"
QString endpointUrl(const QString &bind, quint16 port);

} // namespace bp::rest
