#include "waiting_room.h"

#include <algorithm>

namespace bp::rest {

WaitingRoom::WaitingRoom(FrontendContext &context, CallTable &calls) : m_context(context), m_calls(calls)
{
    // Waiting calls go in when their completions show the queue has moved
    // (CallTable::afterDeliveries); the timer is the fallback for room made
    // by other traffic (the console) and ends waits that ran out. 1 ms cost
    // 17% of a core in poll() over 320 waiting connections; 10 ms is cheap.
    m_timer.setInterval(10);
    QObject::connect(&m_timer, &QTimer::timeout, &m_timer, [this] { pump(); });
}

bool WaitingRoom::hasRoom(std::size_t rows)
{
    const auto now = InferCall::SteadyTime::clock::now();
    if (m_capacityReadAt == InferCall::SteadyTime{} ||
        now - m_capacityReadAt > std::chrono::milliseconds(20)) {
        m_capacity = std::size_t(std::max(0, m_context.engine.config().queueCapacity));
        m_capacityReadAt = now;
    }
    // A call with more rows than the queue can ever hold goes to the engine,
    // which refuses it with the reason.
    return rows > m_capacity || m_context.engine.queueDepth() + rows <= m_capacity;
}

bool WaitingRoom::full() const
{
    const RestOptions &o = m_context.options;
    return o.admissionWait.count() > 0 && !m_waiting.empty() &&
           m_waiting.size() >= std::size_t(o.maxWaitingRequests);
}

HttpReply WaitingRoom::fullReply() const
{
    return errorReply(
        Status(StatusCode::QueueFull, "admission queue is full and " + std::to_string(m_waiting.size()) +
                                          " requests are already waiting for room; retry later"));
}

void WaitingRoom::admit(InferCall call, std::vector<Request> rows)
{
    const RestOptions &o = m_context.options;
    const bool waitingAllowed = o.admissionWait.count() > 0 && o.maxWaitingRequests > 0;
    // Arrival order: nobody overtakes a call that is already waiting.
    if (!waitingAllowed || (m_waiting.empty() && hasRoom(rows.size())))
        return m_calls.submit(std::move(call), std::move(rows));
    if (m_waiting.size() >= std::size_t(o.maxWaitingRequests))
        return m_context.send(call.ticket,
                              call.withServerTiming(fullReply(), InferCall::SteadyTime::clock::now()));
    const auto deadline = call.received + o.admissionWait;
    m_waiting.push_back({std::move(call), std::move(rows), deadline});
    if (!m_timer.isActive())
        m_timer.start();
}

void WaitingRoom::pump()
{
    const bool draining = m_context.isDraining();
    while (!m_waiting.empty()) {
        WaitingCall &front = m_waiting.front();
        if (!front.call.ticket.queue) { // the client has gone: nothing to run it for
            m_waiting.pop_front();
            continue;
        }
        if (draining) {
            WaitingCall w = std::move(front);
            m_waiting.pop_front();
            m_context.send(w.call.ticket, w.call.withServerTiming(errorReply(HttpStatus::ServiceUnavailable,
                                                                             "server is shutting down")
                                                                      .withErrorCode("shutting_down"),
                                                                  InferCall::SteadyTime::clock::now()));
            continue;
        }
        if (!hasRoom(front.rows.size()))
            break;
        WaitingCall w = std::move(front);
        m_waiting.pop_front();
        m_calls.submit(std::move(w.call), std::move(w.rows));
    }
    const auto now = InferCall::SteadyTime::clock::now();
    while (!m_waiting.empty() && m_waiting.front().deadline <= now) {
        WaitingCall w = std::move(m_waiting.front());
        m_waiting.pop_front();
        const auto waitedMs =
            std::chrono::duration_cast<std::chrono::milliseconds>(now - w.call.received).count();
        m_context.send(w.call.ticket,
                       w.call.withServerTiming(
                           errorReply(Status(StatusCode::QueueFull,
                                             "admission queue is full (" + std::to_string(m_capacity) +
                                                 " requests) and stayed full for " +
                                                 std::to_string(waitedMs) + " ms; retry later")),
                           now));
    }
    if (m_waiting.empty())
        m_timer.stop();
}

} // namespace bp::rest
