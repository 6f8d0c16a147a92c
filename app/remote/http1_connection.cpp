#include "http1_connection.h"

#include <QSslSocket>
#include <QTcpSocket>

namespace bp::remote {

HttpEndpoint endpointOf(const QUrl &url)
{
    HttpEndpoint e;
    e.tls = url.scheme() == QLatin1String("https");
    e.host = url.host();
    e.port = quint16(url.port(e.tls ? 443 : 80));
    return e;
}

QByteArray basePathOf(const QUrl &url)
{
    QByteArray p = url.path(QUrl::FullyEncoded).toUtf8();
    while (p.endsWith('/'))
        p.chop(1);
    return p;
}

QByteArray requestPathOf(const QUrl &url)
{
    QByteArray p = url.path(QUrl::FullyEncoded).toUtf8();
    if (p.isEmpty())
        p = "/";
    if (url.hasQuery())
        p += '?' + url.query(QUrl::FullyEncoded).toUtf8();
    return p;
}

QByteArray HttpResult::header(const QByteArray &lowerName) const
{
    for (const auto &[name, value] : headers)
        if (name == lowerName)
            return value;
    return {};
}

Http1Connection::Http1Connection(HttpEndpoint endpoint, QObject *parent)
    : QObject(parent), m_endpoint(std::move(endpoint))
{
    m_timer.setSingleShot(true);
    m_timer.setTimerType(Qt::PreciseTimer); // a coarse timer may fire 5% early
    connect(&m_timer, &QTimer::timeout, this, &Http1Connection::onTimeout);
}

Http1Connection::~Http1Connection()
{
    if (m_active)
        complete(QStringLiteral("connection closed by the client"));
    dropSocket();
}

void Http1Connection::start(HttpExchange exchange, std::function<void(HttpResult &&)> done)
{
    Q_ASSERT(!m_active);
    m_active = true;
    m_retried = false;
    m_exchange = std::move(exchange);
    m_done = std::move(done);
    m_result = HttpResult{};
    m_result.started = SteadyClock::now();
    if (m_exchange.timeout > Duration::zero())
        m_timer.start(std::chrono::duration_cast<std::chrono::milliseconds>(m_exchange.timeout));
    if (m_socket && m_socket->state() == QAbstractSocket::ConnectedState) {
        m_reused = true;
        writeRequest();
    } else {
        m_reused = false;
        connectSocket();
    }
}

void Http1Connection::connectSocket()
{
    dropSocket();
    if (m_endpoint.tls) {
        auto *ssl = new QSslSocket(this);
        m_socket = ssl;
        connect(ssl, &QSslSocket::encrypted, this, &Http1Connection::writeRequest);
        connect(ssl, &QSslSocket::sslErrors, this, [this](const QList<QSslError> &errors) {
            // complete() drops the socket before its callback may start the next exchange.
            complete(
                QStringLiteral("TLS: %1").arg(errors.isEmpty() ? QString() : errors.front().errorString()));
        });
    } else {
        m_socket = new QTcpSocket(this);
        connect(m_socket, &QTcpSocket::connected, this, &Http1Connection::writeRequest);
    }
    m_socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    connect(m_socket, &QTcpSocket::readyRead, this, &Http1Connection::onReadyRead);
    connect(m_socket, &QTcpSocket::disconnected, this, &Http1Connection::onDisconnected);
    connect(m_socket, &QTcpSocket::errorOccurred, this, &Http1Connection::onError);
    if (auto *ssl = qobject_cast<QSslSocket *>(m_socket))
        ssl->connectToHostEncrypted(m_endpoint.host, m_endpoint.port);
    else
        m_socket->connectToHost(m_endpoint.host, m_endpoint.port);
}

void Http1Connection::writeRequest()
{
    if (!m_active || !m_socket)
        return;
    m_state = State::StatusLine;
    m_buffer.clear();
    m_anyByte = false;
    m_keepAlive = true;
    QByteArray head;
    head.reserve(256 + m_exchange.body.size());
    head += m_exchange.method + ' ' + m_exchange.path + " HTTP/1.1\r\nHost: " + m_endpoint.host.toUtf8();
    if ((m_endpoint.tls && m_endpoint.port != 443) || (!m_endpoint.tls && m_endpoint.port != 80))
        head += ':' + QByteArray::number(m_endpoint.port);
    head += "\r\n";
    for (const auto &[name, value] : m_exchange.headers)
        head += name + ": " + value + "\r\n";
    if (!m_exchange.body.isEmpty() || m_exchange.method == "POST" || m_exchange.method == "PUT")
        head += "Content-Length: " + QByteArray::number(m_exchange.body.size()) + "\r\n";
    head += "\r\n";
    head += m_exchange.body;
    m_socket->write(head);
}

void Http1Connection::onReadyRead()
{
    if (!m_active) {
        m_socket->readAll(); // nothing asked: an unsolicited byte means the connection is unusable
        dropSocket();
        return;
    }
    const TimePoint now = SteadyClock::now();
    if (!m_anyByte) {
        m_anyByte = true;
        m_result.firstByte = now;
    }
    m_buffer += m_socket->readAll();
    if (parse())
        complete({});
    else if (m_state == State::Done) // parse() failed and completed with an error
        return;
}

void Http1Connection::onDisconnected()
{
    if (!m_active)
        return;
    if (m_state == State::UntilClose) {
        if (m_exchange.onBodyPiece && !m_buffer.isEmpty())
            m_exchange.onBodyPiece(m_buffer, SteadyClock::now());
        else
            m_result.body += m_buffer;
        m_buffer.clear();
        m_keepAlive = false;
        complete({});
        return;
    }
    if (!m_anyByte && m_reused && !m_retried) {
        // The server closed the idle keep-alive connection as we reused it:
        // nothing was answered, so sending again is safe.
        m_retried = true;
        m_reused = false;
        QMetaObject::invokeMethod(
            this,
            [this] {
                if (m_active)
                    connectSocket();
            },
            Qt::QueuedConnection);
        return;
    }
    complete(m_anyByte ? QStringLiteral("the server closed the connection mid-response")
                       : QStringLiteral("the server closed the connection without answering"));
}

void Http1Connection::onError()
{
    if (!m_active || !m_socket)
        return;
    if (m_socket->error() == QAbstractSocket::RemoteHostClosedError)
        return;                        // disconnected() follows and decides
    complete(m_socket->errorString()); // drops the socket before the callback runs
}

void Http1Connection::onTimeout()
{
    if (!m_active)
        return;
    complete(QStringLiteral("timed out after %1 ms")
                 .arg(std::chrono::duration_cast<std::chrono::milliseconds>(m_exchange.timeout).count()),
             true);
}

void Http1Connection::abort(const QString &reason)
{
    // Drop first: complete()'s callback may start the next exchange, whose
    // new socket must survive this call.
    dropSocket();
    if (m_active)
        complete(reason);
}

void Http1Connection::dropSocket()
{
    if (!m_socket)
        return;
    QTcpSocket *s = m_socket;
    m_socket = nullptr;
    s->disconnect(this);
    s->abort();
    s->deleteLater();
}

void Http1Connection::complete(const QString &error, bool timedOut)
{
    if (!m_active)
        return;
    m_active = false;
    m_timer.stop();
    m_state = State::Done;
    m_result.finished = SteadyClock::now();
    m_result.error = error;
    m_result.timedOut = timedOut;
    if (!error.isEmpty())
        m_result.status = 0;
    const bool reusable = error.isEmpty() && m_keepAlive;
    auto done = std::move(m_done);
    m_done = nullptr;
    HttpResult result = std::move(m_result);
    m_result = HttpResult{};
    m_exchange = HttpExchange{};
    if (!reusable)
        dropSocket();
    if (done)
        done(std::move(result));
}

bool Http1Connection::badResponse(const QString &what)
{
    complete(QStringLiteral("bad response: %1").arg(what)); // drops the socket
    return false;
}

void Http1Connection::emitPiece(const QByteArray &piece)
{
    if (piece.isEmpty())
        return;
    if (m_exchange.onBodyPiece)
        m_exchange.onBodyPiece(piece, SteadyClock::now());
    else
        m_result.body += piece;
}

std::optional<bool> Http1Connection::parseStatusLine(const QByteArray &line)
{
    // HTTP/1.1 200 OK
    const QList<QByteArray> parts = line.split(' ');
    if (parts.size() < 2 || !parts[0].startsWith("HTTP/1."))
        return badResponse(QStringLiteral("status line '%1'").arg(QString::fromLatin1(line.left(80))));
    bool ok = false;
    m_result.status = parts[1].toInt(&ok);
    if (!ok)
        return badResponse(QStringLiteral("status '%1'").arg(QString::fromLatin1(parts[1])));
    m_keepAlive = parts[0] == "HTTP/1.1";
    m_state = State::Headers;
    return std::nullopt;
}

std::optional<bool> Http1Connection::parseHeaderLine(const QByteArray &line)
{
    if (line.isEmpty())
        return endOfHead();
    const qsizetype colon = line.indexOf(':');
    if (colon <= 0)
        return badResponse(QStringLiteral("header line '%1'").arg(QString::fromLatin1(line.left(80))));
    m_result.headers.append({line.left(colon).trimmed().toLower(), line.mid(colon + 1).trimmed()});
    return std::nullopt;
}

// The head is read: how the body comes (none, chunked, Content-Length, or
// until the server closes) and whether the socket may be kept.
std::optional<bool> Http1Connection::endOfHead()
{
    if (m_result.status >= 100 && m_result.status < 200) { // 100 Continue and friends
        m_result.headers.clear();
        m_state = State::StatusLine;
        return std::nullopt;
    }
    const QByteArray connection = m_result.header("connection").toLower();
    if (connection.contains("close"))
        m_keepAlive = false;
    else if (connection.contains("keep-alive"))
        m_keepAlive = true;
    const QByteArray te = m_result.header("transfer-encoding").toLower();
    const QByteArray cl = m_result.header("content-length");
    if (m_exchange.method == "HEAD" || m_result.status == 204 || m_result.status == 304) {
        m_state = State::Done;
        return true;
    }
    if (te.contains("chunked")) {
        m_state = State::ChunkSize;
    } else if (!cl.isEmpty()) {
        bool ok = false;
        m_remaining = cl.toLongLong(&ok);
        if (!ok || m_remaining < 0)
            return badResponse(QStringLiteral("Content-Length '%1'").arg(QString::fromLatin1(cl)));
        m_state = State::Body;
    } else {
        m_keepAlive = false;
        m_state = State::UntilClose;
    }
    return std::nullopt;
}

std::optional<bool> Http1Connection::parseChunkSize(const QByteArray &line)
{
    QByteArray size = line;
    if (const qsizetype semi = size.indexOf(';'); semi >= 0)
        size.truncate(semi);
    bool ok = false;
    m_remaining = size.trimmed().toLongLong(&ok, 16);
    if (!ok || m_remaining < 0)
        return badResponse(QStringLiteral("chunk size '%1'").arg(QString::fromLatin1(line.left(40))));
    m_state = m_remaining == 0 ? State::Trailers : State::ChunkData;
    return std::nullopt;
}

std::optional<bool> Http1Connection::parseLine(const QByteArray &line)
{
    switch (m_state) {
    case State::StatusLine: return parseStatusLine(line);
    case State::Headers: return parseHeaderLine(line);
    case State::ChunkSize: return parseChunkSize(line);
    case State::ChunkEnd:
        if (!line.isEmpty())
            return badResponse(QStringLiteral("chunk not followed by CRLF"));
        m_state = State::ChunkSize;
        return std::nullopt;
    default: // Trailers
        if (line.isEmpty()) {
            m_state = State::Done;
            return true;
        }
        return std::nullopt;
    }
}

std::optional<bool> Http1Connection::parseBody()
{
    const qint64 take = std::min<qint64>(m_remaining, m_buffer.size());
    if (take > 0) {
        emitPiece(m_buffer.left(take));
        m_buffer.remove(0, take);
        m_remaining -= take;
    }
    if (m_remaining > 0)
        return false;
    if (m_state == State::Body) {
        m_state = State::Done;
        return true;
    }
    m_state = State::ChunkEnd;
    return std::nullopt;
}

bool Http1Connection::parse()
{
    for (;;) {
        std::optional<bool> result;
        switch (m_state) {
        case State::StatusLine:
        case State::Headers:
        case State::ChunkSize:
        case State::ChunkEnd:
        case State::Trailers: {
            const qsizetype eol = m_buffer.indexOf("\r\n");
            if (eol < 0) {
                if (m_buffer.size() > 64 * 1024)
                    return badResponse(QStringLiteral("header line longer than 64 KiB"));
                return false;
            }
            const QByteArray line = m_buffer.left(eol);
            m_buffer.remove(0, eol + 2);
            result = parseLine(line);
            break;
        }
        case State::Body:
        case State::ChunkData: result = parseBody(); break;
        case State::UntilClose:
            emitPiece(m_buffer);
            m_buffer.clear();
            return false;
        case State::Done: return true;
        }
        if (result)
            return *result;
    }
}

} // namespace bp::remote
