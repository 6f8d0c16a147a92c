// A small blocking HTTP/1.1 client over QTcpSocket for the integration
// tests: exact control over what goes on the wire (oversized bodies, a
// client that hangs up mid-request, several requests in flight at once),
// and every wait is a condition wait with a deadline, never a sleep.
#pragma once

#include <QByteArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMap>
#include <QTcpSocket>

#include <memory>

struct HttpResponse {
    int status = 0;                       // 0: no complete response arrived
    QMap<QByteArray, QByteArray> headers; // lower-case names
    QByteArray body;
    QString error; // why status is 0

    QJsonObject json() const { return QJsonDocument::fromJson(body).object(); }
    QByteArray header(const QByteArray &name) const { return headers.value(name.toLower()); }
};

class HttpConnection {
public:
    explicit HttpConnection(quint16 port, const QString &host = QStringLiteral("127.0.0.1"));
    bool isConnected() const;

    // Writes one request (Content-Length set from body unless given; Host:
    // 127.0.0.1 unless given).
    void send(const QByteArray &method, const QByteArray &path, const QByteArray &body = {},
              const QList<QPair<QByteArray, QByteArray>> &headers = {});
    void sendRaw(const QByteArray &bytes);
    // Reads one response; waits at most timeoutMs. A chunked body (an SSE
    // stream) is read to its end and given without its framing.
    HttpResponse read(int timeoutMs = 20000);
    // Closes the connection at once (RST when data is unread).
    void abort();
    // True when the server closed the connection within timeoutMs.
    bool waitForClose(int timeoutMs = 10000);

private:
    std::unique_ptr<QTcpSocket> m_socket;
    QByteArray m_buffer;
};

// One request on a fresh connection.
HttpResponse httpRequest(quint16 port, const QByteArray &method, const QByteArray &path,
                         const QByteArray &body = {},
                         const QList<QPair<QByteArray, QByteArray>> &headers = {}, int timeoutMs = 20000);
QByteArray toJson(const QJsonObject &object);
