// ContinuousScheduler after a step (continuous_scheduler.h): the outcome
// applied to the running sequences, tokens reported, finished ones completed.
#include "continuous_scheduler.h"
#include "continuous_sequence.h"
#include "sequence_ends.h"

#include "engine/exec/outcome.h"

#include <algorithm>

namespace bp {

void ContinuousScheduler::complete(SequencePtr s, Status status, TimePoint now, UnitDone &done)
{
    Response r = sequenceResponse(*s, std::move(status), now);
    r.cachedTokens = s->cachedPromptTokens;
    done.done.push_back(std::move(s->pending));
    done.responses.push_back(std::move(r));
}

bool ContinuousScheduler::finished(WorkUnit &unit, UnitRun &run, TimePoint now, UnitDone &done)
{
    if (Batch *batch = unit.batch()) {
        // dispatched by the request-level scheduler this one replaced
        batchDone(*batch, run, done);
        return false;
    }
    m_workInFlight = false;
    m_now = now;
    StepWork &step = *unit.step();
    const Status &status = run.guard.status;
    std::vector<StepOutcome> &outcomes = run.outcomes;
    for (std::size_t i = 0; i < step.items.size(); ++i) {
        const StepItem &item = step.items[i];
        auto it = std::find_if(m_running.begin(), m_running.end(),
                               [&](const SequencePtr &s) { return s->id == item.sequence; });
        if (it == m_running.end())
            continue; // taken by takeAll() meanwhile
        Sequence &s = **it;
        const Status &own = status.isOk() && i < outcomes.size() ? outcomes[i].status : status;
        if (!own) {
            SequencePtr failed = std::move(*it);
            m_running.erase(it);
            release(*failed);
            complete(std::move(failed), own, now, done);
            continue;
        }
        m_kvTokens += kvGrowth(s, std::int64_t(item.tokens.size()));
        s.cached += std::int64_t(item.tokens.size());
        adoptPublished(s, item.publish);
        if (!item.sample)
            continue;
        const TokenId token = outcomes[i].next;
        s.generated.push_back(token);
        if (s.generated.size() == 1)
            s.firstToken = now;
        else
            s.gaps.push_back(now - s.lastToken); // a preempted sequence's stall included
        s.lastToken = now;
        if (s.pending.request.onToken) {
            const TokenEvent event{s.pending.request.id, token, int(s.generated.size()) - 1, now};
            try {
                s.pending.request.onToken(event);
            } catch (...) {
                // a throwing token callback is the client's bug; generation goes on
            }
        }
        if (int(s.generated.size()) >= s.pending.request.maxNewTokens) {
            SequencePtr ended = std::move(*it);
            m_running.erase(it);
            release(*ended);
            complete(std::move(ended), Status::ok(), now, done);
        }
    }
    evictOverflow();
    step.runningAfter = int(m_running.size());
    step.waitingAfter = int(m_waiting.size());
    step.kvTokensAfter = kvTokens();
    done.record = stepRecordOf(step, run);
    return true;
}

} // namespace bp
