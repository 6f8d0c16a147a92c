#include "http_client.h"

#include <QDeadlineTimer>

HttpConnection::HttpConnection(quint16 port, const QString &host) : m_socket(std::make_unique<QTcpSocket>())
{
    m_socket->connectToHost(host, port);
    m_socket->waitForConnected(10000);
}

bool HttpConnection::isConnected() const
{
    return m_socket->state() == QAbstractSocket::ConnectedState;
}

void HttpConnection::send(const QByteArray &method, const QByteArray &path, const QByteArray &body,
                          const QList<QPair<QByteArray, QByteArray>> &headers)
{
    QByteArray out = method + ' ' + path + " HTTP/1.1\r\n";
    bool haveLength = false, haveHost = false;
    for (const auto &[name, value] : headers) {
        out += name + ": " + value + "\r\n";
        haveLength = haveLength || name.compare("content-length", Qt::CaseInsensitive) == 0;
        haveHost = haveHost || name.compare("host", Qt::CaseInsensitive) == 0;
    }
    if (!haveHost)
        out += "Host: 127.0.0.1\r\n";
    if (!haveLength && (!body.isEmpty() || method == "POST" || method == "PUT"))
        out += "Content-Length: " + QByteArray::number(body.size()) + "\r\n";
    out += "\r\n" + body;
    sendRaw(out);
}

void HttpConnection::sendRaw(const QByteArray &bytes)
{
    m_socket->write(bytes);
    m_socket->flush();
}

HttpResponse HttpConnection::read(int timeoutMs)
{
    HttpResponse r;
    QDeadlineTimer deadline(timeoutMs);
    qsizetype headerEnd = -1;
    qint64 contentLength = -1;
    for (;;) {
        m_buffer += m_socket->readAll();
        if (headerEnd < 0) {
            headerEnd = m_buffer.indexOf("\r\n\r\n");
            if (headerEnd >= 0) {
                const QList<QByteArray> lines = m_buffer.left(headerEnd).split('\n');
                const QList<QByteArray> statusLine = lines.front().trimmed().split(' ');
                r.status = statusLine.size() >= 2 ? statusLine[1].toInt() : 0;
                for (qsizetype i = 1; i < lines.size(); ++i) {
                    const qsizetype colon = lines[i].indexOf(':');
                    if (colon > 0)
                        r.headers.insert(lines[i].left(colon).trimmed().toLower(),
                                         lines[i].mid(colon + 1).trimmed());
                }
                contentLength = r.headers.value("content-length", "0").toLongLong();
                if (r.status == 100) { // interim answer: the real one follows
                    m_buffer.remove(0, headerEnd + 4);
                    r = HttpResponse();
                    headerEnd = -1;
                    continue;
                }
            }
        }
        if (headerEnd >= 0 && r.header("transfer-encoding") == "chunked") {
            // A chunked body (a server-sent-event stream): whole once the
            // zero-length chunk has arrived; the body is the chunks' payload.
            QByteArray payload;
            qsizetype at = headerEnd + 4;
            bool ended = false;
            for (;;) {
                const qsizetype lineEnd = m_buffer.indexOf("\r\n", at);
                if (lineEnd < 0)
                    break;
                bool ok = false;
                const qsizetype size = m_buffer.mid(at, lineEnd - at).trimmed().toLongLong(&ok, 16);
                if (!ok || m_buffer.size() < lineEnd + 2 + size + 2)
                    break;
                if (size == 0) {
                    at = lineEnd + 4;
                    ended = true;
                    break;
                }
                payload += m_buffer.mid(lineEnd + 2, size);
                at = lineEnd + 2 + size + 2;
            }
            if (ended) {
                r.body = payload;
                m_buffer.remove(0, at);
                return r;
            }
        } else if (headerEnd >= 0 && m_buffer.size() >= headerEnd + 4 + contentLength) {
            r.body = m_buffer.mid(headerEnd + 4, contentLength);
            m_buffer.remove(0, headerEnd + 4 + contentLength);
            return r;
        }
        if (deadline.hasExpired() || m_socket->state() != QAbstractSocket::ConnectedState) {
            m_buffer += m_socket->readAll();
            if (headerEnd >= 0 && m_buffer.size() >= headerEnd + 4 + contentLength)
                continue;
            HttpResponse failed;
            failed.error = deadline.hasExpired()
                               ? QStringLiteral("timed out waiting for a response")
                               : QStringLiteral("connection closed: ") + m_socket->errorString();
            return failed;
        }
        m_socket->waitForReadyRead(int(std::max<qint64>(1, deadline.remainingTime())));
    }
}

void HttpConnection::abort()
{
    m_socket->abort();
}

bool HttpConnection::waitForClose(int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (m_socket->state() == QAbstractSocket::ConnectedState && !deadline.hasExpired()) {
        m_socket->waitForReadyRead(int(std::max<qint64>(1, deadline.remainingTime())));
        m_buffer += m_socket->readAll();
    }
    return m_socket->state() != QAbstractSocket::ConnectedState;
}

HttpResponse httpRequest(quint16 port, const QByteArray &method, const QByteArray &path,
                         const QByteArray &body, const QList<QPair<QByteArray, QByteArray>> &headers,
                         int timeoutMs)
{
    HttpConnection c(port);
    if (!c.isConnected()) {
        HttpResponse r;
        r.error = QStringLiteral("cannot connect to port %1").arg(port);
        return r;
    }
    c.send(method, path, body, headers);
    return c.read(timeoutMs);
}

QByteArray toJson(const QJsonObject &object)
{
    return QJsonDocument(object).toJson(QJsonDocument::Compact);
}
