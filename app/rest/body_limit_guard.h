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
// How the guard stays in step with Qt's parser: connection_guard.h.
//
// Lives on the server thread, like every socket it creates.
#pragma once

#include <QTcpServer>

#include <cstdint>
#include <map>

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

    // For the connection guards:
    const StreamLimits &limits() const { return m_limits; }
    // The HTTP server whose readyRead handling a guard switches off.
    QObject *httpServer() const { return m_httpServer; }
    // A guard answered `httpStatus` itself.
    void countRejected(int httpStatus) { ++m_rejectedByCode[httpStatus]; }

protected:
    void incomingConnection(qintptr descriptor) override;

private:
    StreamLimits m_limits;
    QObject *m_httpServer;
    std::map<int, std::uint64_t> m_rejectedByCode;
};

} // namespace bp::rest
