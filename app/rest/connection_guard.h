// One connection's watcher (GuardedTcpServer, body_limit_guard.h, creates
// it for every socket): it sees each request's line and headers on the raw
// byte stream before Qt parses them, and answers 431/413/411/400 itself.
//
// How it stays in step with Qt: its readyRead slot is connected before
// Qt's (slots run in connection order) and only peek()s, so on every
// readyRead it sees exactly the bytes Qt is about to readAll(). When it
// rejects, it disconnects Qt's slot for that socket, so Qt never sees the
// request, then discards what the client still sends of the declared body
// (bounded) and closes: a client that writes its body before reading gets
// the error status instead of a connection reset. The answer is an OpenAI
// error object when the request line names an OpenAI route (routes.h).
//
// A child of its socket; server thread only.
#pragma once

#include "http_reply.h"

#include <QByteArray>
#include <QObject>

#include <cstdint>

class QTcpSocket;

namespace bp::rest {

class GuardedTcpServer;

class ConnectionGuard : public QObject {
    Q_OBJECT
public:
    ConnectionGuard(QTcpSocket *socket, GuardedTcpServer *server);

    // Qt parses no further request from this connection; whatever the
    // client still sends is read and thrown away until the connection
    // closes (the pipelining limit: HttpFrontend::refusePipelined).
    void ignoreFurtherInput();

private:
    void onReadyRead();
    void onRejectedReadyRead();
    // Consumes `data` (new bytes of the stream); false once rejected.
    bool consume(const char *data, qsizetype size);
    bool headersComplete();
    void reject(int httpStatus, const char *message);
    // The error shape of the request whose head is in m_head (its path).
    ErrorStyle requestStyle() const;

    QTcpSocket *m_socket;
    GuardedTcpServer *m_server;
    QByteArray m_head;              // the current request's line + headers so far
    std::int64_t m_bodyLeft = 0;    // body bytes of the current request still to come
    std::int64_t m_discardLeft = 0; // after a rejection: declared body still to swallow
    bool m_rejected = false;
};

} // namespace bp::rest
