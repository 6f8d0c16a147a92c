// The HTTP side of the endpoint: a QAbstractHttpServer that routes every
// request itself (routes.h), checks the bearer token, answers metadata,
// config, stats and metrics at once and hands inference to the engine.
//
// Asynchronous answers (the Qt 6.4 trap in DESIGN.md): no handler returns a
// QFuture and no thread waits for a batch. handleRequest() parks the
// request's QHttpServerResponder in its connection's queue and submits to
// the engine with a completion that only pushes (call id, row, Response)
// into the CompletionInbox. The inbox wakes this object's thread, which
// formats and writes the answer. A request waiting for its batch holds no
// thread and no engine-side reference to any Qt object.
//
// Session reports (GET /v1/sessions/{id}/report) render on a pool thread of
// their own; the finished bytes come back to this thread as a queued call,
// so a PDF being drawn never stalls inference answers.
//
// Threading: lives on, and is used only from, the RestServer's thread,
// except setDraining() (any thread).
#pragma once

#include "completion_inbox.h"
#include "infer_call.h"
#include "rest_options.h"
#include "routes.h"

#include "engine/engine.h"

#include <QAbstractHttpServer>
#include <QThreadPool>
#include <QTimer>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <unordered_map>

namespace bp::rest {

class GuardedTcpServer;

class HttpFrontend : public QAbstractHttpServer {
    Q_OBJECT
public:
    // `engine` must outlive this object.
    HttpFrontend(Engine &engine, RestOptions options, QString version, QObject *parent = nullptr);
    ~HttpFrontend() override;

    // Binds the listening socket. The actual port, or the reason it failed.
    Result<quint16> startListening();
    // New requests get 503 (health/ready reports not ready) while draining.
    void setDraining(bool draining) { m_draining.store(draining, std::memory_order_relaxed); }
    // Takes every completion that has arrived and writes its answer now.
    void flushCompletions();
    // Flushes what is written to the sockets and closes the listener.
    void closeAll();

protected:
    bool handleRequest(const QHttpServerRequest &request, QTcpSocket *socket) override;
    void missingHandler(const QHttpServerRequest &request, QTcpSocket *socket) override;

private:
    void dispatch(const QHttpServerRequest &request, const ReplyTicket &ticket);
    bool authorized(const QHttpServerRequest &request) const;
    HttpReply handleSync(Route route, const RouteMatch &match, const QHttpServerRequest &request);
    HttpReply putConfig(const QByteArray &body);
    HttpReply metrics();
    void startV1Infer(const QByteArray &body, const ReplyTicket &ticket);
    void startOipInfer(const RouteMatch &match, const QByteArray &body, const ReplyTicket &ticket);
    // POST /v1/completions (openai_codec.h, completion_call.h).
    void startCompletion(const QByteArray &body, const ReplyTicket &ticket);
    // A token of a streamed completion: its chunk goes out now.
    void onToken(InferCall &call, TokenId token);
    // A finished completion: the end of its stream, or its whole answer.
    void finishCompletion(InferCall &call);
    // Submits the call now if the admission queue has room for its rows,
    // else parks it in the waiting room (RestOptions::admissionWait).
    void admit(InferCall call, std::vector<Request> rows);
    void submitCall(InferCall call, std::vector<Request> rows);
    // Submits waiting calls while there is room; answers those whose wait
    // is over (429) or whose client has gone (nothing). Runs after every
    // burst of completions and on m_waitTimer.
    void pumpWaiting();
    bool hasRoom(std::size_t rows);
    bool waitingRoomFull() const;
    HttpReply waitingRoomFullReply() const;
    // A request over the per-connection pipelining limit: answered 429 in
    // order, the connection closed after it, nothing more read from it.
    void refusePipelined(QTcpSocket *socket, const ReplyTicket &ticket);
    void onDeliveries(std::vector<Delivery> &deliveries);
    void startReport(const RouteMatch &match, const QHttpServerRequest &request, const ReplyTicket &ticket);
    void send(const ReplyTicket &ticket, HttpReply reply);

    Engine &m_engine;
    const RestOptions m_options;
    const QString m_version;
    const QByteArray m_expectedAuthorization; // "Bearer <token>", empty when no token
    // Without a token, only requests whose Host names this address or a
    // loopback name are served (DNS-rebinding protection, docs/rest.md).
    const QHostAddress m_boundAddress;
    std::atomic<bool> m_draining{false};
    GuardedTcpServer *m_listener = nullptr;
    std::shared_ptr<CompletionInbox> m_inbox;
    std::unordered_map<quint64, InferCall> m_calls;
    quint64 m_nextCallId = 1;
    quint64 m_nextCompletionId = 1;
    // When handleRequest() was entered for the request being dispatched.
    InferCall::SteadyTime m_requestStart{};
    // Calls waiting for room in the admission queue, oldest first (all wait
    // the same admissionWait, so the front's deadline is the earliest).
    struct WaitingCall {
        InferCall call;
        std::vector<Request> rows;
        InferCall::SteadyTime deadline;
    };
    std::deque<WaitingCall> m_waiting;
    QTimer m_waitTimer; // every 10 ms while m_waiting is not empty
    // engine.config().queueCapacity, re-read at most every 20 ms (it takes
    // the engine mutex and copies the config).
    std::size_t m_capacity = 0;
    InferCall::SteadyTime m_capacityReadAt{};
    std::map<int, std::uint64_t> m_responsesByCode;
    // Reports being rendered: job id -> where the answer goes.
    std::unordered_map<quint64, ReplyTicket> m_reports;
    quint64 m_nextReportId = 1;
    QThreadPool m_ownReportPool; // one report at a time, unless RestOptions::reportPool is given
    QThreadPool *m_reportPool;   // waited for first in the destructor
};

} // namespace bp::rest
