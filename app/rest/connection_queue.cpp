#include "connection_queue.h"

#include <QTcpSocket>

namespace bp::rest {

ConnectionQueue::ConnectionQueue(QTcpSocket *socket) : QObject(socket), m_socket(socket)
{
    // Once per connection: the flags go up as soon as the client hangs up,
    // before Qt gets round to deleting the socket (and this queue).
    connect(socket, &QAbstractSocket::disconnected, this, &ConnectionQueue::cancelAll);
}

ConnectionQueue::~ConnectionQueue()
{
    cancelAll();
}

void ConnectionQueue::cancelAll()
{
    for (Slot &slot : m_slots)
        if (slot.cancelled)
            slot.cancelled->store(true);
}

std::shared_ptr<std::atomic<bool>> ConnectionQueue::cancelFlag(quint64 seq)
{
    for (Slot &slot : m_slots) {
        if (slot.seq == seq) {
            if (!slot.cancelled)
                slot.cancelled = std::make_shared<std::atomic<bool>>(false);
            return slot.cancelled;
        }
    }
    return nullptr;
}

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

void ConnectionQueue::stream(quint64 seq, QByteArray bytes, bool last)
{
    for (Slot &slot : m_slots) {
        if (slot.seq == seq) {
            Q_ASSERT(!slot.ready);
            slot.streaming = true;
            slot.responder.reset(); // written raw; an unwritten 6.4 responder touches nothing
            slot.raw += bytes;
            slot.ready = last;
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
    while (!m_slots.empty()) {
        // A client that hung up may leave the socket alive until Qt's
        // deleteLater runs: write only to a connected socket.
        const bool connected = m_socket->state() == QAbstractSocket::ConnectedState;
        Slot &front = m_slots.front();
        if (front.streaming) {
            // What a stream has so far goes out as soon as it is at the front.
            if (connected && !front.raw.isEmpty())
                m_socket->write(front.raw);
            front.raw.clear();
            if (!front.ready)
                break;
            m_slots.pop_front();
            continue;
        }
        if (!front.ready)
            break;
        Slot slot = std::move(front);
        m_slots.pop_front();
        if (!connected)
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
        queue->fulfil(seq, styled(std::move(reply), style));
}

void ReplyTicket::stream(QByteArray bytes, bool last) const
{
    if (queue)
        queue->stream(seq, std::move(bytes), last);
}

std::shared_ptr<std::atomic<bool>> ReplyTicket::cancelFlag() const
{
    std::shared_ptr<std::atomic<bool>> flag = queue ? queue->cancelFlag(seq) : nullptr;
    return flag ? flag : std::make_shared<std::atomic<bool>>(true); // nobody is left to answer
}

} // namespace bp::rest
