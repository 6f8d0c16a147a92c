#include "connection_guard.h"

#include "body_limit_guard.h"
#include "connection_queue.h"
#include "http_reply.h"
#include "routes.h"

#include <QTcpSocket>

#include <algorithm>
#include <string>

namespace bp::rest {

namespace {
// After a rejection, at most this much of a declared body is read and
// thrown away before the connection is closed regardless.
constexpr std::int64_t kMaxDiscard = 64 << 20;

bool headerIs(const QByteArray &line, qsizetype colon, const char *name)
{
    return line.left(colon).trimmed().compare(name, Qt::CaseInsensitive) == 0;
}
} // namespace

ConnectionGuard::ConnectionGuard(QTcpSocket *socket, GuardedTcpServer *server)
    : QObject(socket), m_socket(socket), m_server(server)
{
    connect(socket, &QIODevice::readyRead, this, &ConnectionGuard::onReadyRead);
}

void ConnectionGuard::onReadyRead()
{
    const qint64 available = m_socket->bytesAvailable();
    if (available <= 0)
        return;
    // peek() starts at the position of Qt's open read transaction, so these
    // are exactly the bytes Qt's parser has not read yet.
    const QByteArray data = m_socket->peek(available);
    if (consume(data.constData(), data.size()))
        return;
    // Rejected: drop what is buffered (including bytes an open Qt read
    // transaction holds), then swallow the rest of the declared body.
    if (m_socket->isTransactionStarted())
        m_socket->commitTransaction();
    m_socket->skip(m_socket->bytesAvailable());
    if (m_discardLeft <= 0) {
        ConnectionQueue::of(m_socket)->closeWhenFlushed();
        return;
    }
    connect(m_socket, &QIODevice::readyRead, this, &ConnectionGuard::onRejectedReadyRead);
}

bool ConnectionGuard::consume(const char *data, qsizetype size)
{
    qsizetype i = 0;
    while (i < size) {
        if (m_bodyLeft > 0) {
            const qsizetype take = qsizetype(std::min<std::int64_t>(m_bodyLeft, size - i));
            m_bodyLeft -= take;
            i += take;
            continue;
        }
        const qsizetype before = m_head.size();
        m_head.append(data + i, size - i);
        const qsizetype end = m_head.indexOf("\r\n\r\n", std::max<qsizetype>(0, before - 3));
        if (end < 0) {
            if (m_head.size() > m_server->limits().maxHeaderBytes) {
                reject(431, "request line and headers are larger than the limit");
                return false;
            }
            return true;
        }
        const qsizetype headLength = end + 4;
        i += headLength - before;
        m_head.truncate(headLength);
        if (headLength > m_server->limits().maxHeaderBytes) {
            reject(431, "request line and headers are larger than the limit");
            return false;
        }
        if (!headersComplete()) {
            // the body bytes that came with the headers count as discarded
            m_discardLeft = std::max<std::int64_t>(0, m_discardLeft - (size - i));
            return false;
        }
        m_head.clear();
    }
    return true;
}

bool ConnectionGuard::headersComplete()
{
    std::int64_t contentLength = -1;
    bool expectContinue = false;
    const QList<QByteArray> lines = m_head.split('\n');
    bool requestLineSeen = false;
    for (const QByteArray &raw : lines) {
        const QByteArray line = raw.endsWith('\r') ? raw.chopped(1) : raw;
        if (!requestLineSeen) {
            requestLineSeen = !line.isEmpty(); // tolerate empty lines before the request line
            continue;
        }
        const qsizetype colon = line.indexOf(':');
        if (colon <= 0)
            continue; // Qt's parser judges malformed lines
        if (headerIs(line, colon, "content-length")) {
            bool ok = false;
            const qint64 value = line.mid(colon + 1).trimmed().toLongLong(&ok);
            if (!ok || value < 0 || (contentLength >= 0 && contentLength != value)) {
                reject(400, "malformed or conflicting Content-Length header");
                return false;
            }
            contentLength = value;
        } else if (headerIs(line, colon, "transfer-encoding")) {
            reject(411, "chunked request bodies are not supported: send a Content-Length");
            return false;
        } else if (headerIs(line, colon, "expect")) {
            expectContinue = line.mid(colon + 1).trimmed().compare("100-continue", Qt::CaseInsensitive) == 0;
        }
    }
    const std::int64_t limit = m_server->limits().maxBodyBytes;
    if (contentLength > limit) {
        m_discardLeft = expectContinue ? 0 : std::min(contentLength, kMaxDiscard);
        const std::string message = "request body of " + std::to_string(contentLength) +
                                    " bytes is larger than the limit of " + std::to_string(limit) + " bytes";
        reject(413, message.c_str());
        return false;
    }
    if (expectContinue && contentLength > 0)
        m_socket->write("HTTP/1.1 100 Continue\r\n\r\n");
    m_bodyLeft = std::max<std::int64_t>(contentLength, 0);
    return true;
}

void ConnectionGuard::reject(int httpStatus, const char *message)
{
    m_rejected = true;
    m_server->countRejected(httpStatus);
    // Qt's parser never sees this request, nor anything after it.
    QObject::disconnect(m_socket, &QIODevice::readyRead, m_server->httpServer(), nullptr);
    disconnect(m_socket, &QIODevice::readyRead, this, &ConnectionGuard::onReadyRead);
    ConnectionQueue::of(m_socket)->pushRaw(rawErrorResponse(HttpStatus(httpStatus), message, requestStyle()));
    m_head.clear();
}

ErrorStyle ConnectionGuard::requestStyle() const
{
    // "POST /v1/chat/completions?x=1 HTTP/1.1": the path is the second word.
    qsizetype start = 0;
    while (start < m_head.size() && (m_head[start] == '\r' || m_head[start] == '\n'))
        ++start; // empty lines before the request line are tolerated
    const qsizetype lineEnd = m_head.indexOf('\n', start);
    const QList<QByteArray> words =
        m_head.mid(start, lineEnd < 0 ? -1 : lineEnd - start).trimmed().split(' ');
    if (words.size() < 2)
        return ErrorStyle::Plain;
    QByteArray path = words[1];
    if (const qsizetype query = path.indexOf('?'); query >= 0)
        path.truncate(query);
    return isOpenAiPath(QString::fromLatin1(path)) ? ErrorStyle::OpenAi : ErrorStyle::Plain;
}

void ConnectionGuard::ignoreFurtherInput()
{
    QObject::disconnect(m_socket, &QIODevice::readyRead, m_server->httpServer(), nullptr);
    disconnect(m_socket, &QIODevice::readyRead, this, &ConnectionGuard::onReadyRead);
    connect(m_socket, &QIODevice::readyRead, this, [this] { m_socket->skip(m_socket->bytesAvailable()); });
    if (m_socket->isTransactionStarted())
        m_socket->commitTransaction();
    m_socket->skip(m_socket->bytesAvailable());
}

void ConnectionGuard::onRejectedReadyRead()
{
    const qint64 n = m_socket->bytesAvailable();
    m_socket->skip(n);
    m_discardLeft -= n;
    if (m_discardLeft <= 0) {
        disconnect(m_socket, &QIODevice::readyRead, this, &ConnectionGuard::onRejectedReadyRead);
        ConnectionQueue::of(m_socket)->closeWhenFlushed();
    }
}

} // namespace bp::rest
