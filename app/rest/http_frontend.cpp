#include "http_frontend.h"

#include "body_limit_guard.h"
#include "connection_guard.h"

#include <QHttpServerRequest>
#include <QTcpSocket>

namespace bp::rest {

HttpFrontend::HttpFrontend(Engine &engine, RestOptions options, QString version, QObject *parent)
    : QAbstractHttpServer(parent), m_context(engine, std::move(options), std::move(version)),
      m_gate(m_context.options, engine.model()), m_calls(m_context, this), m_waiting(m_context, m_calls),
      m_gpu(m_context.options.gpu, m_context.options.gpuSamplePeriod),
      m_v1(m_context, m_waiting, this, [this] { return httpFigures(); }, m_gpu), m_oip(m_context, m_waiting),
      m_openAi(m_context, m_waiting)
{
    // The queue has moved: make room for who waits.
    m_calls.afterDeliveries = [this] { m_waiting.pump(); };
}

// Members go in reverse order: the APIs (a report still rendering is waited
// for), the waiting room, then the call table, whose inbox drops every
// completion that arrives from then on.
HttpFrontend::~HttpFrontend() = default;

Result<quint16> HttpFrontend::startListening()
{
    const RestOptions &o = m_context.options;
    const QHostAddress address = parseBindAddress(o.bind);
    auto *listener = new GuardedTcpServer({o.maxBodyBytes, o.maxHeaderBytes}, this);
    if (!listener->listen(address, o.port)) {
        const std::string why = listener->errorString().toStdString();
        delete listener;
        return Status(StatusCode::Unavailable,
                      "cannot listen on " + endpointUrl(o.bind, o.port).toStdString() + ": " + why);
    }
    bind(listener); // Qt takes new connections from it; reparented to this
    m_listener = listener;
    return listener->serverPort();
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
    m_context.requestStart = InferCall::SteadyTime::clock::now();
    ConnectionQueue *queue = ConnectionQueue::of(socket);
    const bool overPipelined = queue->pendingCount() >= std::size_t(m_context.options.maxPipelinedRequests);
    const QString path = request.url().path();
    const ErrorStyle style = isOpenAiPath(path) ? ErrorStyle::OpenAi : ErrorStyle::Plain;
    const ReplyTicket ticket{queue, queue->reserve(makeResponder(request, socket)), style};
    if (overPipelined) {
        refusePipelined(socket, ticket);
        return true;
    }
    if (request.value("Connection").compare("close", Qt::CaseInsensitive) == 0)
        queue->closeWhenFlushed();
    // Everything the request carries is read before this returns: Qt 6.4
    // reuses the request object for the next request on the same connection.
    RequestGate::Decision decision = m_gate.check(request, path, m_context.isDraining());
    if (decision.refusal) {
        m_context.send(ticket, std::move(*decision.refusal));
        return true;
    }
    const Route route = *decision.match.route;
    switch (apiOf(route)) {
    case Api::Oip: m_oip.handle(route, request, ticket); break;
    case Api::V1: m_v1.handle(route, decision.match, request, ticket); break;
    case Api::OpenAi: m_openAi.handle(route, request, ticket); break;
    }
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
    const std::string limit = std::to_string(m_context.options.maxPipelinedRequests);
    m_context.send(ticket,
                   errorReply(HttpStatus::TooManyRequests,
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

HttpFigures HttpFrontend::httpFigures() const
{
    HttpFigures f;
    f.responsesByCode = m_context.responsesByCode;
    f.callsInFlight = m_calls.size();
    f.waiting = m_waiting.size();
    if (m_listener) {
        for (const auto &[code, count] : m_listener->rejectedByCode())
            f.responsesByCode[code] += count;
        f.connections = std::uint64_t(
            m_listener->findChildren<QTcpSocket *>(QString(), Qt::FindDirectChildrenOnly).size());
    }
    return f;
}

} // namespace bp::rest
