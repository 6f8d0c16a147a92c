// Admission on the HTTP side (docs/rest.md, "Under overload"): an inference
// call that finds the engine's admission queue full waits here, in arrival
// order, up to RestOptions::admissionWait for room, and is submitted as
// soon as there is room; a call still waiting then is answered 429 with
// Retry-After. At most maxWaitingRequests wait; beyond that, 429 at once
// (the API handlers ask full() before they even parse the body).
//
// Room is judged from Engine::queueDepth() against queue_capacity (re-read
// at most every 20 ms: it takes the engine's mutex and copies the config).
// The engine's own capacity check stays the authority; this only keeps
// clients that retry at once from turning the server thread into a
// rejection loop.
//
// Server thread only.
#pragma once

#include "call_table.h"
#include "frontend_context.h"
#include "infer_call.h"

#include <QTimer>

#include <deque>

namespace bp::rest {

class WaitingRoom {
public:
    WaitingRoom(FrontendContext &context, CallTable &calls);

    // Submits the call now if the admission queue has room for its rows
    // (and nobody waits before it), else parks it.
    void admit(InferCall call, std::vector<Request> rows);
    // Submits waiting calls while there is room; answers those whose wait
    // is over (429), those whose client has gone (nothing) and, while
    // draining, every one (503). Runs after every burst of completions and
    // on a 10 ms timer while anything waits.
    void pump();
    // The room is full: a new call is refused before it is parsed.
    bool full() const;
    // The 429 for that.
    HttpReply fullReply() const;
    std::size_t size() const { return m_waiting.size(); }

private:
    bool hasRoom(std::size_t rows);

    FrontendContext &m_context;
    CallTable &m_calls;
    // Oldest first (all wait the same admissionWait, so the front's deadline
    // is the earliest).
    struct WaitingCall {
        InferCall call;
        std::vector<Request> rows;
        InferCall::SteadyTime deadline;
    };
    std::deque<WaitingCall> m_waiting;
    QTimer m_timer; // every 10 ms while m_waiting is not empty
    std::size_t m_capacity = 0;
    InferCall::SteadyTime m_capacityReadAt{};
};

} // namespace bp::rest
