// SequenceBooks after a step (sequence_books.h): the outcome applied to the
// running sequences, tokens reported, finished ones completed.
#include "outcome.h"
#include "sequence_books.h"

#include <algorithm>
#include <limits>

namespace bp {

void SequenceBooks::complete(SequencePtr s, Status status, TimePoint now, UnitDone &done)
{
    // The one definition of an iteration-level sequence's timing.
    const Request &req = s->pending.request;
    Response r;
    r.requestId = req.id;
    r.status = std::move(status);
    if (r.status.isOk())
        r.tokens = std::move(s->generated);
    r.timing.total = now - req.arrival;
    r.timing.queueWait = s->joined ? s->firstJoin - req.arrival : r.timing.total;
    r.timing.compute = s->joined ? now - s->firstJoin : Duration::zero();
    const std::size_t n = r.status.isOk() ? r.tokens.size() : s->generated.size();
    if (n > 0)
        r.timing.timeToFirstToken = s->firstToken - req.arrival;
    if (n > 1) {
        r.timing.timePerOutputToken =
            timePerOutputToken(s->firstToken - req.arrival, s->lastToken - req.arrival, n);
        r.timing.interTokenLatencies = std::move(s->gaps);
    }
    r.batch.reason = DispatchReason::Single;
    r.cachedTokens = s->cachedPromptTokens;
    done.done.push_back(std::move(s->pending));
    done.responses.push_back(std::move(r));
}

void SequenceBooks::appendToken(Sequence &s, TokenId token, TimePoint now)
{
    s.generated.push_back(token);
    if (s.generated.size() == 1)
        s.firstToken = now;
    else
        s.gaps.push_back(now - s.lastToken); // a preempted sequence's stall included
    s.lastToken = now;
    if (!s.pending.request.onToken)
        return;
    const TokenEvent event{s.pending.request.id, token, int(s.generated.size()) - 1, now};
    try {
        s.pending.request.onToken(event);
    } catch (...) {
        // a throwing token callback is the client's bug; generation goes on
    }
}

bool SequenceBooks::finished(WorkUnit &unit, UnitRun &run, TimePoint now, UnitDone &done)
{
    if (Batch *batch = unit.batch()) { // dispatched by a request-level scheduler this one replaced
        batchDone(*batch, run, done);
        return false;
    }
    m_workInFlight = false;
    m_now = now;
    StepWork &step = *unit.step();
    const Status &status = run.guard.status;
    for (std::size_t i = 0; i < step.items.size(); ++i) {
        const StepItem &item = step.items[i];
        auto it = std::find_if(m_running.begin(), m_running.end(),
                               [&](const SequencePtr &s) { return s->id == item.sequence; });
        if (it == m_running.end())
            continue; // taken by takeAll() meanwhile
        Sequence &s = **it;
        const Status &own = status.isOk() && i < run.outcomes.size() ? run.outcomes[i].status : status;
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
        appendToken(s, run.outcomes[i].next, now);
        if (int(s.generated.size()) >= s.maxNew()) {
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
    stepDone(step);
    done.record = stepRecordOf(step, run);
    return true;
}

int SequenceBooks::decodeRunRoom() const
{
    if (m_workInFlight || !m_waiting.empty() || m_running.empty() || m_prefix || m_preemptedUnreported > 0)
        return 0;
    int room = std::numeric_limits<int>::max();
    for (const SequencePtr &s : m_running) {
        const Request &r = s->pending.request;
        if (!s->decoding() || r.cancelled || r.onToken || s->id == 0)
            return 0;
        // Its last token ends it: the run stops before that step.
        room = std::min(room, s->maxNew() - int(s->generated.size()) - 1);
    }
    return std::max(0, room);
}

void SequenceBooks::applyDecodeRun(std::span<const TimePoint> ends)
{
    m_workInFlight = false;
    for (const TimePoint end : ends) {
        m_ids->next(); // the step's unit id
        for (const SequencePtr &p : m_running) {
            Sequence &s = *p;
            m_kvTokens += kvGrowth(s, 1);
            s.cached += 1;
            appendToken(s, TokenId(0), end); // the cost model's token
        }
        m_now = end;
    }
}

} // namespace bp
