#include "connection_queue.h"

#include <QTcpSocket>

namespace bp::rest {

ConnectionQueue::ConnectionQueue(QTcpSocket *socket) : QObject(socket), m_socket(socket) {}

ConnectionQueue *ConnectionQueue::of(QTcpSocket *socket)
{
    if (auto *q = socket->findChild<ConnectionQueue *>(QString(), Qt::FindDirectChildrenOnly))
        return q;
    return new ConnectionQueue(socket);
}

quint64 ConnectionQueue::reserve(QHttpServerResponder &&responder)
{
    Slot slot;
    slot.seq = m_nextSeq++;
    slot.responder.emplace(std::move(responder));
    m_slots.push_back(std::move(slot));
    return m_slots.back().seq;
}

void ConnectionQueue::fulfil(quint64 seq, HttpReply reply)
{
    for (Slot &slot : m_slots) {
        if (slot.seq == seq) {
            Q_ASSERT(!slot.ready);
            slot.reply.emplace(std::move(reply));
            slot.ready = true;
            break;
        }
    }
    flush();
}

void ConnectionQueue::pushRaw(QByteArray response)
{
    Slot slot;
    slot.seq = m_nextSeq++;
    slot.raw = std::move(response);
    slot.ready = true;
    m_slots.push_back(std::move(slot));
    flush();
}

void ConnectionQueue::closeWhenFlushed()
{
    m_closeWhenFlushed = true;
    flush();
}

void ConnectionQueue::flush()
{
    while (!m_slots.empty() && m_slots.front().ready) {
        Slot slot = std::move(m_slots.front());
        m_slots.pop_front();
        // A client that hung up may leave the socket alive until Qt's
        // deleteLater runs: write only to a connected socket.
        if (m_socket->state() != QAbstractSocket::ConnectedState)
            continue;
        if (slot.responder)
            writeReply(*slot.responder, *slot.reply);
        else
            m_socket->write(slot.raw);
    }
    if (m_closeWhenFlushed && m_slots.empty() && m_socket->state() == QAbstractSocket::ConnectedState)
        m_socket->disconnectFromHost();
}

void ReplyTicket::send(HttpReply reply) const
{
    if (queue)
        queue->fulfil(seq, std::move(reply));
}

} // namespace bp::rest
