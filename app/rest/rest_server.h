// Owns the REST endpoint's thread. start() runs an event loop on a QThread
// of its own, creates the HttpFrontend there and binds; from then on every
// socket, request and response lives on that thread, so a busy endpoint
// never stalls the console's window (and a busy window never stalls it).
//
// Shutdown order (serve.cpp): setDraining(true) -> Engine::shutdown(Drain)
// (the server thread keeps answering: 503 for new work, results for queued
// work) -> stop().
#pragma once

#include "rest_options.h"

#include "engine/exec/engine.h"

#include <QThread>

namespace bp::rest {

class HttpFrontend;

class RestServer {
public:
    // `engine` must outlive the server (or at least stop()).
    RestServer(Engine &engine, RestOptions options, QString version);
    ~RestServer();
    RestServer(const RestServer &) = delete;
    RestServer &operator=(const RestServer &) = delete;

    // Checks the options, starts the thread and binds. Returns the port (the
    // chosen one when options.port is 0) or why it could not start (the
    // thread is stopped again then). Call once, from the owning thread.
    Result<quint16> start();
    quint16 port() const { return m_port; }
    // "http://127.0.0.1:8321"
    QString url() const;

    // Any thread. While draining, inference and config changes get 503 and
    // /v2/health/ready reports not ready.
    void setDraining(bool draining);

    // Writes the answers whose results have arrived, closes every
    // connection and joins the thread. Idempotent; the destructor calls it.
    // Results arriving later are dropped.
    void stop();

private:
    Engine &m_engine;
    const RestOptions m_options;
    const QString m_version;
    QThread m_thread;
    QObject *m_anchor = nullptr;        // lives on m_thread; runs the set-up and tear-down
    HttpFrontend *m_frontend = nullptr; // lives on m_thread
    quint16 m_port = 0;
};

} // namespace bp::rest
