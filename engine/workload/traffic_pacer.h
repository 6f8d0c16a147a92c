// What the load loops (LoadGenerator here, the remote load in app/remote)
// send next, without Qt: the schedule's open-loop arrivals merged with the
// follow-up turns of conversations, each released `thinkTimeS` after the
// previous turn's answer completed (closed loop). Builds each request's
// tokens: the shared system prompt, the conversation's context (the
// conversation book, conversation_book.h: previous prompt + the answer's
// generated ids, else a stand-in of its length), the new text.
//
// The merge is ArrivalPlan's cursor (arrival_plan.h) over a live plan that
// the pacer grows as the schedule draws arrivals: a turn's follow-up takes
// its position when the turn goes out. So the tie rule is the replay's and
// the simulator's: at equal times, the lower position first.
//
// Thread-safe: the load loop calls nextDue/take/wait; completions (engine
// or client threads) call completed().
#pragma once

#include "arrival_plan.h"
#include "workload.h"

#include <condition_variable>
#include <map>
#include <mutex>

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
    void forgetDone();

    std::mutex m_mutex;
    std::condition_variable m_cv;
    WorkloadSchedule m_schedule;       // guarded by m_mutex, as is the rest
    std::optional<ArrivalPlan> m_plan; // made at the first call, from its start
    bool m_openInPlan = false;         // an open-loop arrival drawn and not taken
    bool m_scheduleDone = false;
    // By plan position, those still to go out: the open-loop arrival drawn,
    // the follow-ups reserved (each drawn when its previous turn went out).
    std::map<std::size_t, Arrival> m_arrivals;
    // Sent turns waiting for an answer, by position: their follow-up's.
    std::map<std::size_t, std::size_t> m_waiting;
    std::uint64_t m_releases = 0;
};

} // namespace bp
