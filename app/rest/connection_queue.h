// Answers leave a connection in the order its requests arrived, whenever
// their results come back. Each request's QHttpServerResponder is parked in
// a slot of its connection's queue; a slot is written once it and every slot
// before it have their reply (HTTP/1.1 keep-alive clients may send the next
// request before the previous answer; batches can finish out of order).
//
// Lifetime: the queue is a child of its socket. Qt deletes the socket when
// the client disconnects, and with it the queue and the parked responders
// (destroying an unwritten 6.4 responder touches neither socket nor
// request). A reply that arrives later finds its ReplyTicket's QPointer null
// and is dropped: nothing is written to a socket that is gone. A socket that
// is closing but not yet deleted is never written to either.
//
// Cancellation: a slot can carry a flag (cancelFlag()) that the queue sets
// when the client disconnects while the slot is still unanswered; an engine
// Request that shares the flag (Request::cancelled) then stops at its next
// step. The flag lives in the slot, so a long keep-alive connection holds
// nothing per request once it is answered (no per-request connection to the
// queue's destroyed() signal, which grew by a slot per request).
//
// Server thread only.
#pragma once

#include "http_reply.h"

#include <QObject>
#include <QPointer>

#include <atomic>
#include <deque>
#include <memory>
#include <optional>

class QTcpSocket;

namespace bp::rest {

class ConnectionQueue : public QObject {
    Q_OBJECT
public:
    // The queue of `socket`, created on first use.
    static ConnectionQueue *of(QTcpSocket *socket);

    // Parks the responder; returns the slot's sequence number.
    quint64 reserve(QHttpServerResponder &&responder);
    // Gives slot `seq` its reply and writes every ready slot at the front.
    void fulfil(quint64 seq, HttpReply reply);
    // Slot `seq` answers in pieces (a server-sent-event stream): `bytes` go
    // out as soon as every slot before it is written, the slot ends with
    // `last`. The caller frames them (head, chunks: http_reply.h).
    void stream(quint64 seq, QByteArray bytes, bool last);
    // A pre-formatted answer with no responder (the connection guard's
    // 413/431/411), in order after the slots already reserved.
    void pushRaw(QByteArray response);
    // Close the connection once every reserved slot has been written.
    void closeWhenFlushed();
    // The flag set when the client goes away before slot `seq` is written
    // (created on first use; null for a slot that is already gone).
    std::shared_ptr<std::atomic<bool>> cancelFlag(quint64 seq);

    std::size_t pendingCount() const { return m_slots.size(); }

    ~ConnectionQueue() override;

private:
    explicit ConnectionQueue(QTcpSocket *socket);
    // Sets the cancel flag of every slot still waiting (the client has gone).
    void cancelAll();
    struct Slot {
        quint64 seq = 0;
        std::optional<QHttpServerResponder> responder;
        std::optional<HttpReply> reply;
        QByteArray raw;
        bool ready = false;                           // complete: written and removed when at the front
        bool streaming = false;                       // stream(): `raw` holds what is not yet written
        std::shared_ptr<std::atomic<bool>> cancelled; // cancelFlag(); null until asked for
    };
    void flush();

    QTcpSocket *m_socket;
    std::deque<Slot> m_slots;
    quint64 m_nextSeq = 1;
    bool m_closeWhenFlushed = false;
};

// Where a request's answer goes. Copyable; use and destroy on the server
// thread only.
struct ReplyTicket {
    QPointer<ConnectionQueue> queue;
    quint64 seq = 0;
    // How errors to this request are written (the route's API: routes.h
    // isOpenAiPath).
    ErrorStyle style = ErrorStyle::Plain;

    // Writes the reply (in order) unless the client has gone; an error in
    // the ticket's style.
    void send(HttpReply reply) const;
    // A piece of a streamed answer (ConnectionQueue::stream).
    void stream(QByteArray bytes, bool last) const;
    // Set when the client disconnects before this answer is written
    // (ConnectionQueue::cancelFlag); already set when the client is gone.
    std::shared_ptr<std::atomic<bool>> cancelFlag() const;
    // False once the client has gone (its connection was closed).
    bool connected() const { return !queue.isNull(); }
};

} // namespace bp::rest
