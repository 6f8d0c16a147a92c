// The HTTP side of the endpoint: a QAbstractHttpServer that takes every
// request Qt parses, parks its QHttpServerResponder in the connection's
// queue and hands it on. The pieces, each in its own file:
//   connection_guard.h  limits on the raw byte stream, before Qt parses
//   request_gate.h      routing and auth (413/403/401/404/405/503)
//   oip_api.h           KServe v2 / OIP routes
//   v1_api.h            BatchPilot's /v1 routes, /metrics, reports
//   openai_api.h        the OpenAI-compatible routes (openai_stream.h streams)
//   waiting_room.h      admission: waiting for room in a full queue
//   call_table.h        calls in flight to the engine, and their answers
//   gpu_gauges.h        NVML sampled once a second for /metrics and /v1/stats
//
// Asynchronous answers (the Qt 6.4 trap in DESIGN.md): no handler returns a
// QFuture and no thread waits for a batch. A request's responder is moved
// into its connection's queue (shared state on the server thread) and the
// engine gets a completion that only pushes (call id, row, Response) into
// the CompletionInbox. The inbox wakes this object's thread, which formats
// and writes the answer. A request waiting for its batch holds no thread
// and no engine-side reference to any Qt object.
//
// Threading: lives on, and is used only from, the RestServer's thread,
// except setDraining() (any thread).
#pragma once

#include "call_table.h"
#include "frontend_context.h"
#include "gpu_gauges.h"
#include "oip_api.h"
#include "openai_api.h"
#include "request_gate.h"
#include "v1_api.h"
#include "waiting_room.h"

#include "engine/exec/engine.h"

#include <QAbstractHttpServer>

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
    void setDraining(bool draining) { m_context.draining.store(draining, std::memory_order_relaxed); }
    // Takes every completion that has arrived and writes its answer now.
    void flushCompletions() { m_calls.flush(); }
    // Flushes what is written to the sockets and closes the listener.
    void closeAll();

protected:
    bool handleRequest(const QHttpServerRequest &request, QTcpSocket *socket) override;
    void missingHandler(const QHttpServerRequest &request, QTcpSocket *socket) override;

private:
    // A request over the per-connection pipelining limit: answered 429 in
    // order, the connection closed after it, nothing more read from it.
    void refusePipelined(QTcpSocket *socket, const ReplyTicket &ticket);
    HttpFigures httpFigures() const;

    FrontendContext m_context;
    RequestGate m_gate;
    CallTable m_calls;
    WaitingRoom m_waiting;
    GpuGauges m_gpu;
    V1Api m_v1;
    OipApi m_oip;
    OpenAiApi m_openAi;
    GuardedTcpServer *m_listener = nullptr;
};

} // namespace bp::rest
