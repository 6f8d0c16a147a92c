// One keep-alive HTTP/1.1 client connection (QTcpSocket, or QSslSocket for
// https), one exchange at a time, no pipelining.
//
// Why not QNetworkAccessManager: it caps connections per host at 6 in Qt
// 6.4 (the setting arrived in 6.5), which would silently queue requests in
// the client above a concurrency of 6 (a replay's --max-concurrency is the
// cap we want, exactly), and it hides when the first byte of a streamed
// answer arrived. This class exposes both: the caller owns as many
// connections as its cap allows, and sees every body piece with its time.
//
// The response reader handles Content-Length, chunked transfer coding
// (server-sent events arrive that way) and read-until-close bodies; a
// response with "Connection: close" (or HTTP/1.0 without keep-alive)
// closes the socket after it, and the next exchange reconnects. When a
// reused idle connection turns out to have been closed by the server
// before any byte of the answer came back, the request is sent once more
// on a fresh connection (what browsers and wrk do too); a request is never
// resent once the server has answered anything.
//
// Threading: lives on one thread with an event loop; every callback runs
// there.
#pragma once

#include "engine/core/clock.h"

#include <QByteArray>
#include <QList>
#include <QObject>
#include <QPair>
#include <QString>
#include <QTimer>
#include <QUrl>

#include <functional>
#include <memory>
#include <optional>

class QTcpSocket;

namespace bp::remote {

struct HttpEndpoint {
    bool tls = false;
    QString host;
    quint16 port = 80;
};

// The endpoint of an http:// or https:// URL (its port, or the scheme's).
HttpEndpoint endpointOf(const QUrl &url);
// The URL's path without trailing '/': the base a route is appended to
// (a gateway prefix such as http://gw/llama).
QByteArray basePathOf(const QUrl &url);
// The URL as a request target: its path ("/" when empty) and query.
QByteArray requestPathOf(const QUrl &url);

struct HttpExchange {
    QByteArray method = "GET";
    QByteArray path; // origin-form: "/v2/models/x/infer"
    QByteArray body;
    QList<QPair<QByteArray, QByteArray>> headers; // besides Host, Content-Length
    Duration timeout = std::chrono::seconds(60);  // whole exchange; 0 = none
    // Each piece of the body as it arrives (after de-chunking), with the time
    // it was read. When set, the result's body stays empty.
    std::function<void(const QByteArray &piece, TimePoint at)> onBodyPiece;
};

struct HttpResult {
    int status = 0;                               // 0: no complete response (see error)
    QByteArray body;                              // unless streamed through onBodyPiece
    QList<QPair<QByteArray, QByteArray>> headers; // names lower-cased
    QString error;                                // transport failure: connect, reset, timeout, bad response
    bool timedOut = false;
    TimePoint started{};   // start() was called
    TimePoint firstByte{}; // first byte of the response (zero if none)
    TimePoint finished{};
    QByteArray header(const QByteArray &lowerName) const;
};

class Http1Connection : public QObject {
    Q_OBJECT
public:
    explicit Http1Connection(HttpEndpoint endpoint, QObject *parent = nullptr);
    ~Http1Connection() override;

    bool busy() const { return m_active; }
    // Starts an exchange; `done` is called exactly once (also on abort()).
    void start(HttpExchange exchange, std::function<void(HttpResult &&)> done);
    // Fails the exchange in flight (if any) with `reason` and drops the socket.
    void abort(const QString &reason);

private:
    void connectSocket();
    void writeRequest();
    void onReadyRead();
    void onDisconnected();
    void onError();
    void onTimeout();
    // Parses what is buffered; true when the response is complete.
    bool parse();
    // parse()'s steps: nullopt to go on parsing, else what parse() returns.
    std::optional<bool> parseLine(const QByteArray &line);
    std::optional<bool> parseStatusLine(const QByteArray &line);
    std::optional<bool> parseHeaderLine(const QByteArray &line);
    std::optional<bool> endOfHead();
    std::optional<bool> parseChunkSize(const QByteArray &line);
    std::optional<bool> parseBody();
    // A malformed response: the exchange fails (the socket is dropped).
    bool badResponse(const QString &what);
    // A piece of the body, to the exchange's callback or the result.
    void emitPiece(const QByteArray &piece);
    // Ends the exchange and calls its callback, which may start the next
    // one at once. A failed exchange's socket is dropped *before* the
    // callback, so callers must not touch the socket after complete().
    void complete(const QString &error, bool timedOut = false);
    void dropSocket();

    const HttpEndpoint m_endpoint;
    QTcpSocket *m_socket = nullptr;
    QTimer m_timer;
    bool m_active = false;
    bool m_reused = false; // the exchange went out on a kept-alive socket
    bool m_retried = false;
    bool m_keepAlive = true; // the current response allows reuse
    HttpExchange m_exchange;
    std::function<void(HttpResult &&)> m_done;
    HttpResult m_result;

    enum class State {
        StatusLine,
        Headers,
        Body,
        ChunkSize,
        ChunkData,
        ChunkEnd,
        Trailers,
        UntilClose,
        Done
    };
    State m_state = State::StatusLine;
    QByteArray m_buffer;
    qint64 m_remaining = 0; // Content-Length or chunk bytes still to read
    bool m_anyByte = false;
};

} // namespace bp::remote
