// What the load loops (LoadGenerator here, the remote load in app/remote)
// send next, without Qt: the schedule's open-loop arrivals merged with the
// follow-up turns of conversations, each released `thinkTimeS` after the
// previous turn's answer completed (closed loop). Builds each request's
// tokens: the shared system prompt, the conversation's context (the
// conversation book, conversation_book.h: previous prompt + the answer's
// generated ids, else a stand-in of its length), the new text.
//
// Thread-safe: the load loop calls nextDue/take/wait; completions (engine
// or client threads) call completed().
#pragma once

#include "conversation_book.h"
#include "workload.h"

#include <condition_variable>
#include <mutex>
#include <unordered_map>

namespace bp {

class TrafficPacer {
public:
    explicit TrafficPacer(WorkloadSpec spec);

    struct Item {
        Arrival arrival;
        TimePoint when{}; // the scheduled (released) time: the request's arrival
        std::vector<TokenId> tokens;
        std::uint64_t key = 0; // pass to completed()
    };
    // When the next request is due (start + offset, or a follow-up's
    // release time); nullopt when none is due now: finished(), or every
    // remaining turn waits for a completion.
    std::optional<TimePoint> nextDue(TimePoint start);
    // The next request (call when nextDue() <= now); nullopt when none.
    std::optional<Item> take(TimePoint start);
    // A request finished (or was refused) at `at` on the caller's clock;
    // its answer's generated ids, when the target returned them.
    void completed(std::uint64_t key, TimePoint at, const std::vector<TokenId> &answer);
    // No more requests will come: the schedule is exhausted and no turn
    // is waiting for an answer.
    bool finished();
    // Blocks until `until`, or until a completion released a turn.
    void waitUntil(TimePoint until);

private:
    void fillOpen(TimePoint start);

    std::mutex m_mutex;
    std::condition_variable m_cv;
    WorkloadSchedule m_schedule; // guarded by m_mutex
    std::optional<Arrival> m_open;
    bool m_scheduleDone = false;
    TimePoint m_start{};
    std::uint64_t m_nextKey = 1;
    // In flight with a turn after them: their arrival (their prompts are in the book).
    std::unordered_map<std::uint64_t, Arrival> m_waiting;
    // Released follow-ups, by the key of the turn they follow.
    std::unordered_map<std::uint64_t, Arrival> m_followUps;
    ConversationBook m_book;
    std::uint64_t m_releaseOrder = 0;
};

} // namespace bp
