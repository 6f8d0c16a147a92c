#include "body_limit_guard.h"

#include "connection_guard.h"

#include <QTcpSocket>

namespace bp::rest {

GuardedTcpServer::GuardedTcpServer(StreamLimits limits, QObject *httpServer, QObject *parent)
    : QTcpServer(parent), m_limits(limits), m_httpServer(httpServer)
{
}

void GuardedTcpServer::incomingConnection(qintptr descriptor)
{
    auto *socket = new QTcpSocket(this);
    if (!socket->setSocketDescriptor(descriptor)) {
        delete socket;
        return;
    }
    // Answers are small and written whole: never let Nagle hold one back.
    socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    new ConnectionGuard(socket, this); // connects its readyRead slot before Qt's
    addPendingConnection(socket);
}

} // namespace bp::rest
