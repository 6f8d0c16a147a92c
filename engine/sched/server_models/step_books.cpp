#include "step_books.h"

#include "engine/sched/sequence_ends.h"

#include "engine/exec/outcome.h"

#include <algorithm>
#include <utility>

namespace bp {

TokenId StepBooks::Sequence::contextAt(std::size_t i) const
{
    const auto &p = pending.request.tokens;
    return i < p.size() ? p[i] : generated[i - p.size()];
}

bool StepBooks::Sequence::isCancelled() const
{
    const auto &flag = pending.request.cancelled;
    return flag && flag->load(std::memory_order_relaxed);
}

StepBooks::StepBooks(BatchingConfig config, ModelLimits limits, StepModel &model,
                     std::shared_ptr<UnitIds> ids)
    : Scheduler(std::move(config), std::move(ids)), m_limits(limits), m_model(model)
{
}

StepBooks::~StepBooks()
{
    for (const SequencePtr &s : m_running)
        if (s->id != 0)
            m_model.release(s->id);
}

Status StepBooks::check(const Request &r, TimePoint now) const
{
    if (r.tokens.empty())
        return {StatusCode::InvalidArgument, "input is empty: at least one token is required"};
    if (r.maxNewTokens < 1)
        return {StatusCode::InvalidArgument, "a generating server: max_new_tokens must be at least 1"};
    const int len = int(r.tokens.size());
    if (len + r.maxNewTokens > m_limits.maxSequenceLength)
        return {StatusCode::OutOfRange, "input of " + std::to_string(len) + " tokens plus max_new_tokens " +
                                            std::to_string(r.maxNewTokens) + " exceeds the model's " +
                                            std::to_string(m_limits.maxSequenceLength) + " tokens"};
    for (std::size_t i = 0; i < r.tokens.size(); ++i)
        if (r.tokens[i] < 0 || r.tokens[i] >= m_limits.vocabSize)
            return {StatusCode::OutOfRange, "token id " + std::to_string(r.tokens[i]) + " at position " +
                                                std::to_string(i) + " is outside the vocabulary"};
    if (r.deadline && *r.deadline <= now)
        return {StatusCode::DeadlineExceeded, "deadline already passed at submission"};
    return checkModel(r);
}

Status StepBooks::admit(Pending &pending, TimePoint now)
{
    m_lastAdmitNeedsWake = false;
    if (Status s = check(pending.request, now); !s)
        return s;
    if (size() >= std::size_t(m_config.queueCapacity))
        return {StatusCode::QueueFull,
                "admission queue is full (" + std::to_string(m_config.queueCapacity) + " requests)"};
    m_rate.arrival(now);
    auto s = std::make_unique<Sequence>();
    pending.seq = m_nextSeq++;
    s->pending = std::move(pending);
    m_waiting.push_back(std::move(s));
    m_lastAdmitNeedsWake = !m_workInFlight;
    return Status::ok();
}

void StepBooks::release(Sequence &s)
{
    if (s.id != 0)
        m_model.release(s.id);
    m_kvTokens -= s.cached;
    s.cached = 0;
    s.id = 0;
}

void StepBooks::preempt(std::size_t i)
{
    SequencePtr s = std::move(m_running[i]);
    m_running.erase(m_running.begin() + std::ptrdiff_t(i));
    release(*s);
    s->planned = 0;
    ++m_preemptions;
    ++m_preemptedUnreported;
    m_waiting.push_front(std::move(s));
}

StepBooks::Sequence &StepBooks::joinFront(TimePoint now, StepWork &step)
{
    SequencePtr s = std::move(m_waiting.front());
    m_waiting.pop_front();
    s->id = m_nextSequenceId++;
    if (!s->joined) {
        s->joined = true;
        s->firstJoin = now;
    }
    ++step.joined;
    m_running.push_back(std::move(s));
    return *m_running.back();
}

void StepBooks::feed(Sequence &s, std::int64_t tokens, StepWork &step)
{
    StepItem item;
    item.sequence = s.id;
    item.tokens.reserve(std::size_t(tokens));
    for (std::int64_t k = 0; k < tokens; ++k)
        item.tokens.push_back(s.contextAt(std::size_t(s.cached + s.planned + k)));
    item.sample = s.cached + s.planned + tokens == std::int64_t(s.contextSize());
    (s.decoding() ? step.decodeTokens : step.prefillTokens) += int(tokens);
    step.items.push_back(std::move(item));
    s.planned += tokens;
}

void StepBooks::complete(SequencePtr s, Status status, TimePoint now, UnitDone &done)
{
    Response r = sequenceResponse(*s, std::move(status), now);
    done.done.push_back(std::move(s->pending));
    done.responses.push_back(std::move(r));
}

Scheduler::Poll StepBooks::poll(TimePoint now, bool /*draining*/, bool mayDispatch)
{
    Poll result;
    std::optional<TimePoint> earliest;
    for (auto it = m_waiting.begin(); it != m_waiting.end();) {
        Sequence &s = **it;
        const auto &deadline = s.pending.request.deadline;
        if (s.isCancelled()) {
            result.failed.push_back(
                {std::move(s.pending), Status(StatusCode::Cancelled, "cancelled while queued")});
        } else if (!s.joined && deadline && *deadline <= now) {
            result.expired.push_back(std::move(s.pending));
        } else {
            if (!s.joined && deadline && (!earliest || *deadline < *earliest))
                earliest = deadline;
            ++it;
            continue;
        }
        it = m_waiting.erase(it);
    }
    result.wakeAt = earliest;
    if (m_workInFlight) {
        result.busy = true;
        return result;
    }
    for (std::size_t i = 0; i < m_running.size();) {
        if (!m_running[i]->isCancelled()) {
            ++i;
            continue;
        }
        SequencePtr s = std::move(m_running[i]);
        m_running.erase(m_running.begin() + std::ptrdiff_t(i));
        release(*s);
        result.failed.push_back(
            {std::move(s->pending), Status(StatusCode::Cancelled, "cancelled while running")});
    }
    if (!mayDispatch || (m_waiting.empty() && m_running.empty()))
        return result;
    auto step = std::make_unique<StepWork>();
    decide(now, *step);
    for (SequencePtr &s : m_running)
        s->planned = 0;
    if (step->items.empty())
        return result;
    step->id = m_ids->next();
    step->preempted = std::exchange(m_preemptedUnreported, 0);
    step->dispatchedAt = now;
    step->configVersion = m_configVersion;
    m_workInFlight = true;
    result.unit.emplace(std::move(*step));
    return result;
}

bool StepBooks::finished(WorkUnit &unit, UnitRun &run, TimePoint now, UnitDone &done)
{
    if (Batch *batch = unit.batch()) { // dispatched by a request-level scheduler this one replaced
        batchDone(*batch, run, done);
        return false;
    }
    m_workInFlight = false;
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
        s.cached += std::int64_t(item.tokens.size());
        m_kvTokens += std::int64_t(item.tokens.size());
        if (!item.sample)
            continue;
        const TokenId token = run.outcomes[i].next;
        s.generated.push_back(token);
        if (s.generated.size() == 1)
            s.firstToken = now;
        else
            s.gaps.push_back(now - s.lastToken);
        s.lastToken = now;
        if (s.pending.request.onToken) {
            const TokenEvent event{s.pending.request.id, token, int(s.generated.size()) - 1, now};
            try {
                s.pending.request.onToken(event);
            } catch (...) {
                // a throwing token callback is the client's bug; generation goes on
            }
        }
        if (int(s.generated.size()) >= s.maxNew()) {
            SequencePtr ended = std::move(*it);
            m_running.erase(it);
            release(*ended);
            complete(std::move(ended), Status::ok(), now, done);
        }
    }
    step.runningAfter = int(m_running.size());
    step.waitingAfter = int(m_waiting.size());
    step.kvTokensAfter = m_kvTokens;
    stepDone(step);
    done.record = stepRecordOf(step, run);
    return true;
}

SchedulerGauges StepBooks::gauges(TimePoint now) const
{
    IterationGauges g;
    g.running = m_running.size();
    g.waiting = m_waiting.size();
    g.kvTokens = m_kvTokens;
    g.preemptions = m_preemptions;
    return {{m_waiting.size()}, m_rate.rate(now), Duration::zero(), g};
}

void StepBooks::reconfigure(const BatchingConfig &config, std::uint64_t version)
{
    m_config = config;
    m_configVersion = version;
}

std::vector<Pending> StepBooks::takeAll()
{
    std::vector<SequencePtr> all;
    for (SequencePtr &s : m_waiting)
        all.push_back(std::move(s));
    m_waiting.clear();
    if (!m_workInFlight) {
        for (SequencePtr &s : m_running) {
            release(*s);
            all.push_back(std::move(s));
        }
        m_running.clear();
    }
    return pendingInOrder(std::move(all));
}

} // namespace bp
