#include "http_frontend.h"

#include "engine/nvtx.h"

#include "body_limit_guard.h"
#include "oip_codec.h"
#include "openai_codec.h"
#include "prometheus_exporter.h"
#include "v1_codec.h"

#include "app/report/report_builder.h"
#include "engine/config_json.h"
#include "engine/store/trace_store.h"

#include <QHttpServerRequest>
#include <QTcpSocket>
#include <QUrlQuery>

#include <algorithm>

namespace bp::rest {

using nlohmann::json;

namespace {
std::string_view view(const QByteArray &bytes)
{
    return {bytes.constData(), std::size_t(bytes.size())};
}

// Compares without an early exit, so response timing does not reveal how
// much of a guessed token was right.
bool constantTimeEquals(const QByteArray &a, const QByteArray &b)
{
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (qsizetype i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

std::string hostRefusal(const QByteArray &host)
{
    const QByteArray shown = host.size() > 100 ? host.left(100) + "..." : host;
    return "Host '" + shown.toStdString() +
           "' does not name this server: without a token the endpoint answers only requests for "
           "localhost, 127.0.0.1 or [::1] (protection against DNS rebinding); use one of those names, "
           "or start the server with --token";
}
} // namespace

HttpFrontend::HttpFrontend(Engine &engine, RestOptions options, QString version, QObject *parent)
    : QAbstractHttpServer(parent), m_engine(engine), m_options(std::move(options)),
      m_version(std::move(version)),
      m_expectedAuthorization(m_options.token.isEmpty() ? QByteArray()
                                                        : "Bearer " + m_options.token.toUtf8()),
      m_boundAddress(parseBindAddress(m_options.bind))
{
    m_inbox = CompletionInbox::create(this, [this](std::vector<Delivery> &d) { onDeliveries(d); });
    m_ownReportPool.setMaxThreadCount(1);
    m_reportPool = m_options.reportPool ? m_options.reportPool : &m_ownReportPool;
    // Waiting calls go in when their completions show the queue has moved
    // (onDeliveries); the timer is the fallback for room made by other
    // traffic (the console) and ends waits that ran out. 1 ms cost 17% of a
    // core in poll() over 320 waiting connections; 10 ms is cheap.
    m_waitTimer.setInterval(10);
    connect(&m_waitTimer, &QTimer::timeout, this, &HttpFrontend::pumpWaiting);
}

HttpFrontend::~HttpFrontend()
{
    // Completions that arrive from now on are dropped: nobody is left to answer.
    m_inbox->detach();
    // A report still rendering finishes first, so its job can post to this
    // object until then; Qt discards the posted answer when this object dies.
    m_reportPool->waitForDone();
}

Result<quint16> HttpFrontend::startListening()
{
    const QHostAddress address = parseBindAddress(m_options.bind);
    auto *listener = new GuardedTcpServer({m_options.maxBodyBytes, m_options.maxHeaderBytes}, this);
    if (!listener->listen(address, m_options.port)) {
        const std::string why = listener->errorString().toStdString();
        delete listener;
        return Status(StatusCode::Unavailable, "cannot listen on " +
                                                   endpointUrl(m_options.bind, m_options.port).toStdString() + ": " +
                                                   why);
    }
    bind(listener); // Qt takes new connections from it; reparented to this
    m_listener = listener;
    return listener->serverPort();
}

void HttpFrontend::flushCompletions()
{
    m_inbox->drain();
}

void HttpFrontend::closeAll()
{
    flushCompletions();
    if (!m_listener)
        return;
    m_listener->close();
    // Answers already formatted go out before the sockets are destroyed
    // (briefly blocking this thread; it is shutting down anyway).
    for (QTcpSocket *socket : m_listener->findChildren<QTcpSocket *>(QString(), Qt::FindDirectChildrenOnly)) {
        socket->flush();
        if (socket->bytesToWrite() > 0)
            socket->waitForBytesWritten(200);
    }
}

bool HttpFrontend::handleRequest(const QHttpServerRequest &request, QTcpSocket *socket)
{
    m_requestStart = InferCall::SteadyTime::clock::now();
    ConnectionQueue *queue = ConnectionQueue::of(socket);
    const bool overPipelined = queue->pendingCount() >= std::size_t(m_options.maxPipelinedRequests);
    const ReplyTicket ticket{queue, queue->reserve(makeResponder(request, socket))};
    if (overPipelined) {
        refusePipelined(socket, ticket);
        return true;
    }
    if (request.value("Connection").compare("close", Qt::CaseInsensitive) == 0)
        queue->closeWhenFlushed();
    // Everything the request carries is read here: Qt 6.4 reuses the request
    // object for the next request on the same connection.
    dispatch(request, ticket);
    return true;
}

void HttpFrontend::refusePipelined(QTcpSocket *socket, const ReplyTicket &ticket)
{
    // Qt parses one request per readyRead and comes back for the next;
    // from here on it sees none, and what the client still sends is thrown
    // away, so one connection can never hold more than the limit.
    if (auto *guard = socket->findChild<ConnectionGuard *>(QString(), Qt::FindDirectChildrenOnly))
        guard->ignoreFurtherInput();
    ticket.queue->closeWhenFlushed();
    const std::string limit = std::to_string(m_options.maxPipelinedRequests);
    send(ticket, errorReply(HttpStatus::TooManyRequests,
                            "more than " + limit +
                                " requests sent on one connection without waiting for their answers "
                                "(the pipelining limit); this connection closes after the earlier answers")
                     .withHeader("Retry-After", "1")
                     .withHeader("Connection", "close"));
}

void HttpFrontend::missingHandler(const QHttpServerRequest &request, QTcpSocket *socket)
{
    // Unreachable (handleRequest() answers every request), but answer anyway.
    QHttpServerResponder responder = makeResponder(request, socket);
    writeReply(responder, errorReply(HttpStatus::NotFound, "no such route"));
}

bool HttpFrontend::authorized(const QHttpServerRequest &request) const
{
    if (m_expectedAuthorization.isEmpty())
        return true;
    QByteArray given = request.value("Authorization").trimmed();
    if (given.size() > 7 && given.left(7).compare("bearer ", Qt::CaseInsensitive) == 0)
        given = "Bearer " + given.mid(7).trimmed();
    return constantTimeEquals(given, m_expectedAuthorization);
}

void HttpFrontend::dispatch(const QHttpServerRequest &request, const ReplyTicket &ticket)
{
    const QByteArray body = request.body();
    if (body.size() > m_options.maxBodyBytes) // the guard stops these earlier; this is the backstop
        return send(ticket, errorReply(HttpStatus::PayloadTooLarge, "request body is larger than the limit"));
    if (m_expectedAuthorization.isEmpty() && !isLocalHostHeader(request.value("Host"), m_boundAddress))
        return send(ticket, errorReply(HttpStatus::Forbidden, hostRefusal(request.value("Host"))));
    const RouteMatch match = matchRoute(request.url().path(), request.method());
    const bool health = match.route && isHealthRoute(*match.route);
    if (!health && !authorized(request))
        return send(ticket, errorReply(HttpStatus::Unauthorized, "missing or wrong bearer token")
                                .withHeader("WWW-Authenticate", "Bearer"));
    if (!match.route) {
        if (match.pathKnown)
            return send(ticket, errorReply(HttpStatus::MethodNotAllowed,
                                           "method not allowed here; allowed: " + match.allow.toStdString())
                                    .withHeader("Allow", match.allow));
        return send(ticket, errorReply(HttpStatus::NotFound,
                                       "no route " + request.url().path().toStdString() + " (see docs/rest.md)"));
    }
    if (!match.model.isEmpty()) {
        const std::string name = match.model.toStdString();
        if (!matchesModel(name, m_engine.model()))
            return send(ticket, errorReply(HttpStatus::NotFound, "unknown model '" + name + "' (this server serves '" +
                                                                     servedModelName(m_engine.model()) + "')"));
        if (!match.version.isEmpty() && match.version != QLatin1String("1"))
            return send(ticket, errorReply(HttpStatus::NotFound,
                                           "unknown version '" + match.version.toStdString() + "' (only '1')"));
    }
    const bool draining = m_draining.load(std::memory_order_relaxed);
    switch (*match.route) {
    case Route::V1Infer:
    case Route::OipInfer:
    case Route::Completions:
    case Route::PutConfig:
        if (draining)
            return send(ticket, errorReply(HttpStatus::ServiceUnavailable, "server is shutting down"));
        break;
    default:
        break;
    }
    if (*match.route == Route::V1Infer)
        return startV1Infer(body, ticket);
    if (*match.route == Route::OipInfer)
        return startOipInfer(match, body, ticket);
    if (*match.route == Route::Completions)
        return startCompletion(body, ticket);
    if (*match.route == Route::SessionReport)
        return startReport(match, request, ticket);
    send(ticket, handleSync(*match.route, match, request));
}

HttpReply HttpFrontend::handleSync(Route route, const RouteMatch &, const QHttpServerRequest &request)
{
    const bool ready = !m_draining.load(std::memory_order_relaxed);
    switch (route) {
    case Route::HealthLive:
        return jsonReply(json{{"live", true}});
    case Route::HealthReady:
        return ready ? jsonReply(json{{"ready", true}})
                     : errorReply(HttpStatus::ServiceUnavailable, "not ready: server is shutting down");
    case Route::ServerMetadata:
        return jsonReply(oipServerMetadata(m_version.toStdString()));
    case Route::ModelMetadata:
        return jsonReply(oipModelMetadata(m_engine.model()));
    case Route::ModelReady:
        return ready ? jsonReply(json{{"name", servedModelName(m_engine.model())}, {"ready", true}})
                     : errorReply(HttpStatus::ServiceUnavailable, "not ready: server is shutting down");
    case Route::GetConfig:
        return jsonReply(toJson(m_engine.config()));
    case Route::PutConfig:
        return putConfig(request.body());
    case Route::Stats:
        return jsonReply(toJson(m_engine.snapshot()));
    case Route::Metrics:
        return metrics();
    case Route::V1Infer:
    case Route::OipInfer:
    case Route::Completions:
    case Route::SessionReport:
        break;
    }
    return errorReply(HttpStatus::InternalServerError, "unhandled route");
}

HttpReply HttpFrontend::putConfig(const QByteArray &body)
{
    auto parsed = parseJsonObject(view(body));
    if (!parsed)
        return errorReply(parsed.status());
    // Only the keys in the body change, applied to the config in force at
    // that moment: a concurrent writer's fields are never reverted.
    auto patch = patchFromJson(*parsed);
    if (!patch)
        return errorReply(patch.status());
    auto updated = m_engine.update(*patch, "rest");
    if (!updated)
        return errorReply(updated.status());
    return jsonReply(toJson(updated->after));
}

HttpReply HttpFrontend::metrics()
{
    const Snapshot snapshot = m_engine.snapshot();
    ExporterInput in;
    in.snapshot = &snapshot;
    in.version = m_version.toStdString();
    in.http.responsesByCode = m_responsesByCode;
    in.http.callsInFlight = m_calls.size();
    in.http.waiting = m_waiting.size();
    if (m_listener) {
        for (const auto &[code, count] : m_listener->rejectedByCode())
            in.http.responsesByCode[code] += count;
        in.http.connections = std::uint64_t(
            m_listener->findChildren<QTcpSocket *>(QString(), Qt::FindDirectChildrenOnly).size());
    }
    ++in.http.responsesByCode[200]; // this answer
    if (m_options.droppedTraceRows) {
        in.traceSinkAttached = true;
        in.droppedTraceRows = m_options.droppedTraceRows();
    }
    HttpReply reply;
    const std::string text = renderPrometheus(in);
    reply.body = QByteArray(text.data(), qsizetype(text.size()));
    reply.contentType = prometheusContentType();
    return reply;
}

void HttpFrontend::startV1Infer(const QByteArray &body, const ReplyTicket &ticket)
{
    if (waitingRoomFull()) // refused before the body is even parsed
        return send(ticket, waitingRoomFullReply());
    auto request = [&] {
        const nvtx::Range range(nvtx::Category::Rest, "parse /v1/infer");
        return parseV1Infer(view(body), m_engine.model(), m_engine.clock().now());
    }();
    if (!request)
        return send(ticket, errorReply(request.status()));
    InferCall call;
    call.kind = InferCall::Kind::V1;
    call.ticket = ticket;
    call.modelName = m_engine.model().name;
    call.received = m_requestStart;
    std::vector<Request> rows;
    rows.push_back(std::move(*request));
    admit(std::move(call), std::move(rows));
}

void HttpFrontend::startOipInfer(const RouteMatch &, const QByteArray &body, const ReplyTicket &ticket)
{
    if (waitingRoomFull())
        return send(ticket, waitingRoomFullReply());
    auto parsed = [&] {
        const nvtx::Range range(nvtx::Category::Rest, "parse /v2 infer");
        return parseOipInfer(view(body), m_engine.model(), m_engine.clock().now());
    }();
    if (!parsed)
        return send(ticket, errorReply(parsed.status()));
    InferCall call;
    call.kind = InferCall::Kind::Oip;
    call.ticket = ticket;
    call.modelName = servedModelName(m_engine.model());
    call.received = m_requestStart;
    std::vector<Request> rows = std::move(parsed->rows);
    call.oip = std::move(*parsed);
    admit(std::move(call), std::move(rows));
}

void HttpFrontend::startCompletion(const QByteArray &body, const ReplyTicket &ticket)
{
    if (waitingRoomFull())
        return send(ticket, waitingRoomFullReply());
    auto parsed = [&] {
        const nvtx::Range range(nvtx::Category::Rest, "parse /v1/completions");
        return parseCompletionRequest(view(body), m_engine.model());
    }();
    if (!parsed)
        return send(ticket, errorReply(parsed.status()));
    InferCall call;
    call.kind = InferCall::Kind::Completion;
    call.ticket = ticket;
    call.modelName = servedModelName(m_engine.model());
    call.received = m_requestStart;
    CompletionCall &c = call.completion;
    c.id = "cmpl-" + std::to_string(m_nextCompletionId++);
    c.created = std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count();
    c.model = call.modelName;
    c.stream = parsed->stream;
    c.maxTokens = parsed->request.maxNewTokens;
    c.promptTokens = parsed->promptTokens;
    // A client that disconnects (Qt then deletes its socket and the queue
    // with it) stops its request at the engine's next step or decision.
    parsed->request.cancelled = c.cancelled;
    connect(ticket.queue.data(), &QObject::destroyed, this, [cancelled = c.cancelled] { cancelled->store(true); });
    std::vector<Request> rows;
    rows.push_back(std::move(parsed->request));
    admit(std::move(call), std::move(rows));
}

void HttpFrontend::onToken(InferCall &call, TokenId token)
{
    if (!call.completion.stream)
        return;
    if (!call.ticket.connected()) {
        call.completion.cancelled->store(true);
        return;
    }
    if (!call.completion.headSent())
        ++m_responsesByCode[int(HttpStatus::Ok)];
    call.ticket.stream(call.completion.tokenPiece(token), false);
}

void HttpFrontend::finishCompletion(InferCall &call)
{
    CompletionCall &c = call.completion;
    if (!call.ticket.connected())
        return; // the client has gone (the request was cancelled): nothing to write
    const Status &status = call.refusedRow == 0 ? call.refusal : call.responses.front().status;
    if (!c.stream || (!c.headSent() && !status.isOk()))
        return send(call.ticket, call.reply(InferCall::SteadyTime::clock::now()));
    if (!c.headSent())
        ++m_responsesByCode[int(HttpStatus::Ok)];
    call.ticket.stream(status.isOk() ? c.finishPiece(call.responses.front()) : c.errorPiece(status), true);
}

bool HttpFrontend::hasRoom(std::size_t rows)
{
    const auto now = InferCall::SteadyTime::clock::now();
    if (m_capacityReadAt == InferCall::SteadyTime{} ||
        now - m_capacityReadAt > std::chrono::milliseconds(20)) {
        m_capacity = std::size_t(std::max(0, m_engine.config().queueCapacity));
        m_capacityReadAt = now;
    }
    // A call with more rows than the queue can ever hold goes to the engine,
    // which refuses it with the reason.
    return rows > m_capacity || m_engine.queueDepth() + rows <= m_capacity;
}

bool HttpFrontend::waitingRoomFull() const
{
    return m_options.admissionWait.count() > 0 && !m_waiting.empty() &&
           m_waiting.size() >= std::size_t(m_options.maxWaitingRequests);
}

HttpReply HttpFrontend::waitingRoomFullReply() const
{
    return errorReply(
        Status(StatusCode::QueueFull, "admission queue is full and " + std::to_string(m_waiting.size()) +
                                          " requests are already waiting for room; retry later"));
}

void HttpFrontend::admit(InferCall call, std::vector<Request> rows)
{
    const bool waitingAllowed = m_options.admissionWait.count() > 0 && m_options.maxWaitingRequests > 0;
    // Arrival order: nobody overtakes a call that is already waiting.
    if (!waitingAllowed || (m_waiting.empty() && hasRoom(rows.size())))
        return submitCall(std::move(call), std::move(rows));
    if (m_waiting.size() >= std::size_t(m_options.maxWaitingRequests))
        return send(call.ticket,
                    call.withServerTiming(waitingRoomFullReply(), InferCall::SteadyTime::clock::now()));
    const auto deadline = call.received + m_options.admissionWait;
    m_waiting.push_back({std::move(call), std::move(rows), deadline});
    if (!m_waitTimer.isActive())
        m_waitTimer.start();
}

void HttpFrontend::pumpWaiting()
{
    const bool draining = m_draining.load(std::memory_order_relaxed);
    while (!m_waiting.empty()) {
        WaitingCall &front = m_waiting.front();
        if (!front.call.ticket.queue) { // the client has gone: nothing to run it for
            m_waiting.pop_front();
            continue;
        }
        if (draining) {
            WaitingCall w = std::move(front);
            m_waiting.pop_front();
            send(w.call.ticket, w.call.withServerTiming(
                                    errorReply(HttpStatus::ServiceUnavailable, "server is shutting down"),
                                    InferCall::SteadyTime::clock::now()));
            continue;
        }
        if (!hasRoom(front.rows.size()))
            break;
        WaitingCall w = std::move(front);
        m_waiting.pop_front();
        submitCall(std::move(w.call), std::move(w.rows));
    }
    const auto now = InferCall::SteadyTime::clock::now();
    while (!m_waiting.empty() && m_waiting.front().deadline <= now) {
        WaitingCall w = std::move(m_waiting.front());
        m_waiting.pop_front();
        const auto waitedMs =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - w.call.received).count();
        send(w.call.ticket, w.call.withServerTiming(
                                errorReply(Status(StatusCode::QueueFull,
                                                  "admission queue is full (" + std::to_string(m_capacity) +
                                                      " requests) and stayed full for " +
                                                      std::to_string(waitedMs) + " ms; retry later")),
                                now));
    }
    if (m_waiting.empty())
        m_waitTimer.stop();
}

void HttpFrontend::submitCall(InferCall call, std::vector<Request> rows)
{
    call.submitted = InferCall::SteadyTime::clock::now();
    const quint64 id = m_nextCallId++;
    const int n = int(rows.size());
    call.rows = n;
    call.responses.resize(std::size_t(n));
    call.answered.assign(std::size_t(n), false);
    InferCall &c = m_calls.emplace(id, std::move(call)).first->second;
    if (c.kind == InferCall::Kind::Completion && c.completion.stream && n == 1) {
        // Each token hops to this thread like a completion does; the
        // callback runs on an engine thread and only pushes.
        rows[0].onToken = [inbox = m_inbox, id](const TokenEvent &e) {
            Delivery d;
            d.callId = id;
            d.isToken = true;
            d.token = e.token;
            inbox->push(std::move(d));
        };
    }
    for (int i = 0; i < n; ++i) {
        // The completion runs on an engine thread: it only hands the
        // response over and returns (no Qt object, no pointer into this).
        Status s = m_engine.submit(std::move(rows[std::size_t(i)]),
                                   [inbox = m_inbox, id, i](Response &&response) {
                                       inbox->push({id, i, std::move(response)});
                                   });
        if (!s) {
            c.refusedRow = i;
            c.refusal = std::move(s);
            break; // rows already accepted still answer; the reply waits for them
        }
        ++c.outstanding;
    }
    if (c.outstanding == 0) {
        if (c.kind == InferCall::Kind::Completion)
            finishCompletion(c);
        else
            send(c.ticket, c.reply(InferCall::SteadyTime::clock::now()));
        m_calls.erase(id);
    }
}

void HttpFrontend::onDeliveries(std::vector<Delivery> &deliveries)
{
    for (Delivery &d : deliveries) {
        auto it = m_calls.find(d.callId);
        if (it == m_calls.end())
            continue;
        if (d.isToken) {
            onToken(it->second, d.token);
            continue;
        }
        if (it->second.deliver(d.row, std::move(d.response))) {
            if (it->second.kind == InferCall::Kind::Completion)
                finishCompletion(it->second);
            else
                send(it->second.ticket, it->second.reply(InferCall::SteadyTime::clock::now()));
            m_calls.erase(it);
        }
    }
    if (!m_waiting.empty()) // the queue has moved: make room for who waits
        pumpWaiting();
}

void HttpFrontend::startReport(const RouteMatch &match, const QHttpServerRequest &request, const ReplyTicket &ticket)
{
    const QUrlQuery query(request.url());
    const QString formatName =
        query.hasQueryItem(QStringLiteral("format")) ? query.queryItemValue(QStringLiteral("format")) : "html";
    const auto format = report::formatFromName(formatName);
    if (!format)
        return send(ticket, errorReply(HttpStatus::BadRequest, "format must be html, pdf or json, got '" +
                                                                   formatName.toStdString() + "'"));
    bool ok = false;
    const qint64 sessionId = match.session.toLongLong(&ok);
    if (!ok || sessionId < 1)
        return send(ticket, errorReply(HttpStatus::BadRequest, "session id must be a positive integer, got '" +
                                                                   match.session.toStdString() + "'"));
    if (!m_options.store)
        return send(ticket, errorReply(HttpStatus::ServiceUnavailable,
                                       "no trace database: reports need one (the server runs without --db)"));
    if (m_reports.size() >= std::size_t(m_options.maxQueuedReports))
        return send(ticket,
                    errorReply(HttpStatus::TooManyRequests,
                               std::to_string(m_reports.size()) +
                                   " reports are rendering or waiting to render (the limit); retry later")
                        .withHeader("Retry-After", "1"));
    const quint64 job = m_nextReportId++;
    m_reports.emplace(job, ticket);
    // Rendering (a PDF takes a while) happens on the pool; only the bytes
    // travel back. Nothing here touches the ticket off this thread.
    m_reportPool->start([store = m_options.store, this, job, sessionId, f = *format] {
        auto bytes = report::ReportBuilder(store).build(sessionId, f);
        HttpReply reply;
        if (bytes) {
            reply.body = std::move(*bytes);
            reply.contentType = report::contentType(f);
        } else {
            reply = errorReply(bytes.status());
        }
        QMetaObject::invokeMethod(
            this,
            [this, job, reply = std::move(reply)]() mutable {
                auto it = m_reports.find(job);
                if (it == m_reports.end())
                    return;
                send(it->second, std::move(reply));
                m_reports.erase(it);
            },
            Qt::QueuedConnection);
    });
}

void HttpFrontend::send(const ReplyTicket &ticket, HttpReply reply)
{
    ++m_responsesByCode[int(reply.status)];
    const nvtx::Range range(nvtx::Category::Rest, [&] { return "write " + std::to_string(int(reply.status)); });
    ticket.send(std::move(reply));
}

} // namespace bp::rest
