// Size limits enforced on the raw byte stream, before Qt HttpServer parses
// (and buffers) a request. Qt 6.4's QAbstractHttpServer reads a whole
// request body into memory before a handler sees it and has no limit of its
// own, so a 1 GiB upload would be buffered twice. GuardedTcpServer hands
// each new socket to a ConnectionGuard that watches the same bytes first:
//
//  - request line + headers over maxHeaderBytes  -> 431, connection closed
//  - Content-Length over maxBodyBytes             -> 413, connection closed
//  - Transfer-Encoding (chunked bodies)           -> 411 Length Required
//  - malformed Content-Length                     -> 400
//  - Expect: 100-continue within the limit        -> "100 Continue" sent
//
// How it stays in step with Qt: the guard's readyRead slot is connected
// before Qt's (slots run in connection order) and only peek()s, so on every
// readyRead it sees exactly the bytes Qt is about to readAll(). When it
// rejects, it disconnects Qt's slot for that socket, so Qt never sees the
// request, then discards what the client still sends of the declared body
// (bounded) and closes: a client that writes its body before reading gets
// the error status instead of a connection reset.
//
// Lives on the server thread, like every socket it creates.
#pragma once

#include <QByteArray>
#include <QTcpServer>

#include <cstdint>
#include <map>

class QTcpSocket;

namespace bp::rest {

struct StreamLimits {
    std::int64_t maxBodyBytes = 1 << 20;
    int maxHeaderBytes = 64 * 1024;
};

class GuardedTcpServer : public QTcpServer {
    Q_OBJECT
public:
    // `httpServer` is the QAbstractHttpServer whose readyRead handling the
    // guard switches off for a rejected connection.
    GuardedTcpServer(StreamLimits limits, QObject *httpServer, QObject *parent = nullptr);

    // Answers the guard gave itself (413, 431, 411, 400), by status code.
    const std::map<int, std::uint64_t> &rejectedByCode() const { return m_rejectedByCode; }

protected:
    void incomingConnection(qintptr descriptor) override;

private:
    friend class ConnectionGuard;
    StreamLimits m_limits;
    QObject *m_httpServer;
    std::map<int, std::uint64_t> m_rejectedByCode;
};

// One per connection, a child of its socket.
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

    QTcpSocket *m_socket;
    GuardedTcpServer *m_server;
    QByteArray m_head;             // the current request's line + headers so far
    std::int64_t m_bodyLeft = 0;   // body bytes of the current request still to come
    std::int64_t m_discardLeft = 0; // after a rejection: declared body still to swallow
    bool m_rejected = false;
};

} // namespace bp::rest
