// The hand-over from engine threads to the server thread. Engine
// completions run on executor threads and must not block or touch Qt
// objects; they push their Response here and return. The inbox wakes the
// server thread with one queued call per burst (not one per response), and
// the server thread takes everything that has arrived in one go.
//
// Lifetime: shared by the frontend and every completion still in the
// engine. detach() (from the frontend's destructor, on the server thread)
// makes later pushes no-ops, so a completion arriving after the server is
// gone writes nothing and touches nothing that was freed.
#pragma once

#include "engine/core/request.h"

#include <QObject>

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace bp::rest {

// A row's completion, or (isToken) one token it generated (Request::onToken).
struct Delivery {
    quint64 callId = 0;
    int row = 0;
    Response response;
    bool isToken = false;
    TokenId token = 0;
};

class CompletionInbox : public std::enable_shared_from_this<CompletionInbox> {
public:
    using Sink = std::function<void(std::vector<Delivery> &)>;

    // `target` lives on the server thread; `sink` runs there.
    static std::shared_ptr<CompletionInbox> create(QObject *target, Sink sink);

    // Any thread. Never blocks beyond a short mutex.
    void push(Delivery delivery);
    // Server thread: no more deliveries after this returns.
    void detach();
    // Server thread: hands over what has arrived (also called by the queued wake-up).
    void drain();

private:
    CompletionInbox(QObject *target, Sink sink);

    std::mutex m_mutex;
    // guarded by m_mutex:
    QObject *m_target;
    std::vector<Delivery> m_pending;
    bool m_wakePosted = false;

    Sink m_sink;                    // server thread only
    std::vector<Delivery> m_taking; // server thread only; reused to keep its capacity
};

} // namespace bp::rest
