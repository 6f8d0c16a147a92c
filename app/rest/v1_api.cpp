#include "v1_api.h"

#include "v1_codec.h"

#include "app/report/report_builder.h"
#include "app/report/report_pdf.h"
#include "engine/config/config_json.h"
#include "engine/core/nvtx.h"
#include "engine/metrics/metrics_json.h"

#include <QUrlQuery>

namespace bp::rest {

namespace {
std::string_view view(const QByteArray &bytes)
{
    return {bytes.constData(), std::size_t(bytes.size())};
}
} // namespace

V1Api::V1Api(FrontendContext &context, WaitingRoom &waiting, QObject *thread,
             std::function<HttpFigures()> httpFigures, const GpuGauges &gpu)
    : m_context(context), m_waiting(waiting), m_thread(thread), m_httpFigures(std::move(httpFigures)),
      m_gpu(gpu)
{
    m_ownReportPool.setMaxThreadCount(1);
    m_reportPool = context.options.reportPool ? context.options.reportPool : &m_ownReportPool;
}

V1Api::~V1Api()
{
    // A report still rendering finishes first, so its job can post to the
    // server thread's object until then; Qt discards the posted answer when
    // that object dies.
    m_reportPool->waitForDone();
}

void V1Api::handle(Route route, const RouteMatch &match, const QHttpServerRequest &request,
                   const ReplyTicket &ticket)
{
    switch (route) {
    case Route::V1Infer: return startInfer(request.body(), ticket);
    case Route::SessionReport: return startReport(match, request, ticket);
    case Route::GetConfig: return m_context.send(ticket, jsonReply(toJson(m_context.engine.config())));
    case Route::PutConfig: return m_context.send(ticket, putConfig(request.body()));
    case Route::Stats: return m_context.send(ticket, stats());
    case Route::Metrics: return m_context.send(ticket, metrics());
    default: return m_context.send(ticket, errorReply(HttpStatus::InternalServerError, "unhandled route"));
    }
}

void V1Api::startInfer(const QByteArray &body, const ReplyTicket &ticket)
{
    if (m_waiting.full()) // refused before the body is even parsed
        return m_context.send(ticket, m_waiting.fullReply());
    auto request = [&] {
        const nvtx::Range range(nvtx::Category::Rest, "parse /v1/infer");
        return parseV1Infer(view(body), m_context.engine.model(), m_context.engine.clock().now());
    }();
    if (!request)
        return m_context.send(ticket, errorReply(request.status()));
    InferCall call;
    call.kind = InferCall::Kind::V1;
    call.handler = this;
    call.ticket = ticket;
    call.modelName = m_context.engine.model().name;
    call.tokenizer = m_context.engine.model().tokenizer;
    call.received = m_context.requestStart;
    std::vector<Request> rows;
    rows.push_back(std::move(*request));
    m_waiting.admit(std::move(call), std::move(rows));
}

void V1Api::callAnswered(InferCall &call)
{
    m_context.send(call.ticket, call.reply(InferCall::SteadyTime::clock::now()));
}

HttpReply V1Api::putConfig(const QByteArray &body)
{
    auto parsed = parseJsonObject(view(body));
    if (!parsed)
        return errorReply(parsed.status());
    // Only the keys in the body change, applied to the config in force at
    // that moment: a concurrent writer's fields are never reverted.
    auto patch = patchFromJson(*parsed);
    if (!patch)
        return errorReply(patch.status());
    auto updated = m_context.engine.update(*patch, "rest");
    if (!updated)
        return errorReply(updated.status());
    return jsonReply(toJson(updated->after));
}

HttpReply V1Api::stats()
{
    nlohmann::json j = toJson(m_context.engine.snapshot());
    // The model's facts the snapshot does not carry, beside its name and device.
    const ModelInfo &model = m_context.engine.model();
    j["architecture"] = model.architecture;
    j["dtype"] = model.dtype;
    j["kv_bytes_per_token"] = model.kvBytesPerToken;
    if (const auto &gpu = m_gpu.latest())
        j["gpu"] = toJson(*gpu);
    return jsonReply(j);
}

HttpReply V1Api::metrics()
{
    const Snapshot snapshot = m_context.engine.snapshot();
    ExporterInput in;
    in.snapshot = &snapshot;
    if (const auto &gpu = m_gpu.latest())
        in.gpu = &*gpu;
    in.version = m_context.version.toStdString();
    in.http = m_httpFigures();
    ++in.http.responsesByCode[200]; // this answer
    if (m_context.options.droppedTraceRows) {
        in.traceSinkAttached = true;
        in.droppedTraceRows = m_context.options.droppedTraceRows();
    }
    HttpReply reply;
    const std::string text = renderPrometheus(in);
    reply.body = QByteArray(text.data(), qsizetype(text.size()));
    reply.contentType = prometheusContentType();
    return reply;
}

void V1Api::startReport(const RouteMatch &match, const QHttpServerRequest &request, const ReplyTicket &ticket)
{
    const QUrlQuery query(request.url());
    const QString formatName = query.hasQueryItem(QStringLiteral("format"))
                                   ? query.queryItemValue(QStringLiteral("format"))
                                   : "html";
    const auto format = report::formatFromName(formatName);
    if (!format)
        return m_context.send(ticket,
                              errorReply(HttpStatus::BadRequest, "format must be html, pdf or json, got '" +
                                                                     formatName.toStdString() + "'"));
    if (*format == report::ReportFormat::Pdf && !report::pdfAvailable())
        return m_context.send(ticket, errorReply(HttpStatus::NotImplemented, report::kPdfUnavailable));
    bool ok = false;
    const qint64 sessionId = match.session.toLongLong(&ok);
    if (!ok || sessionId < 1)
        return m_context.send(
            ticket, errorReply(HttpStatus::BadRequest, "session id must be a positive integer, got '" +
                                                           match.session.toStdString() + "'"));
    if (!m_context.options.store)
        return m_context.send(
            ticket, errorReply(HttpStatus::ServiceUnavailable,
                               "no trace database: reports need one (the server runs without --db)"));
    if (m_reports.size() >= std::size_t(m_context.options.maxQueuedReports))
        return m_context.send(
            ticket, errorReply(HttpStatus::TooManyRequests,
                               std::to_string(m_reports.size()) +
                                   " reports are rendering or waiting to render (the limit); retry later")
                        .withHeader("Retry-After", "1"));
    const quint64 job = m_nextReportId++;
    m_reports.emplace(job, ticket);
    // Rendering (a PDF takes a while) happens on the pool; only the bytes
    // travel back. Nothing here touches the ticket off this thread.
    m_reportPool->start(
        [store = m_context.options.store, thread = m_thread, this, job, sessionId, f = *format] {
            auto bytes = report::ReportBuilder(store).build(sessionId, f);
            HttpReply reply;
            if (bytes) {
                reply.body = std::move(*bytes);
                reply.contentType = report::contentType(f);
            } else {
                reply = errorReply(bytes.status());
            }
            QMetaObject::invokeMethod(
                thread,
                [this, job, reply = std::move(reply)]() mutable {
                    auto it = m_reports.find(job);
                    if (it == m_reports.end())
                        return;
                    m_context.send(it->second, std::move(reply));
                    m_reports.erase(it);
                },
                Qt::QueuedConnection);
        });
}

} // namespace bp::rest
