// BatchPilot's own API (docs/rest.md): POST /v1/infer, GET/PUT /v1/config,
// GET /v1/stats, GET /metrics and GET /v1/sessions/{id}/report. Errors are
// {"error": "message"}; a PDF report in a build without Qt Gui is 501.
//
// Session reports render on a pool thread of their own; the finished bytes
// come back to the server thread as a queued call, so a PDF being drawn
// never stalls inference answers.
//
// Server thread only.
#pragma once

#include "call_table.h"
#include "frontend_context.h"
#include "gpu_gauges.h"
#include "prometheus_exporter.h"
#include "routes.h"
#include "waiting_room.h"

#include <QHttpServerRequest>
#include <QThreadPool>

#include <functional>
#include <unordered_map>

namespace bp::rest {

class V1Api : public CallHandler {
public:
    // `thread` lives on the server thread (reports post back to it);
    // `httpFigures` gives the HTTP layer's own figures for /metrics; `gpu`
    // (outlives this) the GPU gauges for /metrics and /v1/stats.
    V1Api(FrontendContext &context, WaitingRoom &waiting, QObject *thread,
          std::function<HttpFigures()> httpFigures, const GpuGauges &gpu);
    // Waits for a report still rendering.
    ~V1Api() override;

    void handle(Route route, const RouteMatch &match, const QHttpServerRequest &request,
                const ReplyTicket &ticket);

    void callAnswered(InferCall &call) override;

private:
    void startInfer(const QByteArray &body, const ReplyTicket &ticket);
    HttpReply putConfig(const QByteArray &body);
    HttpReply metrics();
    HttpReply stats();
    void startReport(const RouteMatch &match, const QHttpServerRequest &request, const ReplyTicket &ticket);

    FrontendContext &m_context;
    WaitingRoom &m_waiting;
    QObject *m_thread;
    std::function<HttpFigures()> m_httpFigures;
    const GpuGauges &m_gpu;
    // Reports being rendered: job id -> where the answer goes.
    std::unordered_map<quint64, ReplyTicket> m_reports;
    quint64 m_nextReportId = 1;
    QThreadPool m_ownReportPool; // one report at a time, unless RestOptions::reportPool is given
    QThreadPool *m_reportPool;
};

} // namespace bp::rest
