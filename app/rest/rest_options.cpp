#include "rest_options.h"

namespace bp::rest {

RestOptions restOptionsFrom(const app::AppOptions &o)
{
    RestOptions r;
    r.bind = o.bind;
    r.port = o.port;
    r.token = o.token;
    r.maxBodyBytes = o.maxBodyBytes;
    return r;
}

QHostAddress parseBindAddress(const QString &bind)
{
    if (bind.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0)
        return QHostAddress(QHostAddress::LocalHost);
    QString text = bind;
    if (text.startsWith('[') && text.endsWith(']'))
        text = text.mid(1, text.size() - 2);
    return QHostAddress(text);
}

bool isDefaultLoopback(const QHostAddress &address)
{
    return address == QHostAddress(QHostAddress::LocalHost) || address == QHostAddress(QHostAddress::LocalHostIPv6);
}

bool isLocalHostHeader(const QByteArray &host, const QHostAddress &bound)
{
    const QByteArray value = host.trimmed();
    if (value.isEmpty())
        return true;
    // Split off the port: "[::1]:8321", "localhost:8321", "127.0.0.1".
    QByteArray name = value, port;
    if (value.startsWith('[')) {
        const qsizetype close = value.indexOf(']');
        if (close < 0)
            return false;
        name = value.left(close + 1);
        const QByteArray rest = value.mid(close + 1);
        if (!rest.isEmpty()) {
            if (!rest.startsWith(':'))
                return false;
            port = rest.mid(1);
        }
    } else if (const qsizetype colon = value.indexOf(':'); colon >= 0) {
        name = value.left(colon);
        port = value.mid(colon + 1);
    }
    if (!port.isEmpty()) {
        bool ok = false;
        const uint n = port.toUInt(&ok);
        if (!ok || n > 65535)
            return false;
    }
    name = name.toLower();
    if (name == "localhost" || name == "127.0.0.1" || name == "[::1]")
        return true;
    // The bound address itself, as a client would write it in a URL.
    if (bound.isNull())
        return false;
    const QByteArray boundName = bound.protocol() == QAbstractSocket::IPv6Protocol
                                     ? '[' + bound.toString().toLatin1().toLower() + ']'
                                     : bound.toString().toLatin1();
    return name == boundName;
}

Status checkRestOptions(const RestOptions &o)
{
    const QHostAddress address = parseBindAddress(o.bind);
    if (address.isNull())
        return {StatusCode::InvalidArgument,
                "--bind '" + o.bind.toStdString() + "' is not an IP address (use e.g. 127.0.0.1, ::1 or 0.0.0.0)"};
    if (!isDefaultLoopback(address) && o.token.isEmpty())
        return {StatusCode::InvalidArgument,
                "binding to " + o.bind.toStdString() +
                    " (not loopback) needs a bearer token: pass --token T or set BATCHPILOT_TOKEN"};
    if (o.maxBodyBytes < 1)
        return {StatusCode::InvalidArgument, "the request body limit must be at least 1 byte"};
    if (o.admissionWait.count() < 0 || o.maxWaitingRequests < 0)
        return {StatusCode::InvalidArgument, "the admission wait and the waiting-request limit must be >= 0"};
    if (o.maxPipelinedRequests < 1 || o.maxQueuedReports < 1)
        return {StatusCode::InvalidArgument, "the pipelining and report-queue limits must be at least 1"};
    if (o.maxHeaderBytes < 1024)
        return {StatusCode::InvalidArgument, "the request header limit must be at least 1024 bytes"};
    return Status::ok();
}

QString endpointUrl(const QString &bind, quint16 port)
{
    const QHostAddress address = parseBindAddress(bind);
    QString host = bind;
    if (address.protocol() == QAbstractSocket::IPv6Protocol && !bind.startsWith('['))
        host = '[' + bind + ']';
    return QStringLiteral("http://%1:%2").arg(host).arg(port);
}

} // namespace bp::rest
