// SequenceBooks (sequence_books.h): admission, the sweeps of a decision,
// joining, feeding, preemption, release, stamping, gauges and takeAll.
// After a step: sequence_books_finished.cpp; the prefix cache:
// sequence_books_prefix.cpp.
#include "sequence_books.h"

#include <algorithm>
#include <utility>

namespace bp {

TokenId SequenceBooks::Sequence::contextAt(std::size_t i) const
{
    const auto &p = pending.request.tokens;
    return i < p.size() ? p[i] : generated[i - p.size()];
}

bool SequenceBooks::Sequence::isCancelled() const
{
    const auto &flag = pending.request.cancelled;
    return flag && flag->load(std::memory_order_relaxed);
}

SequenceBooks::SequenceBooks(BatchingConfig config, ModelLimits limits, StepModel &model,
                             std::shared_ptr<UnitIds> ids, Parts parts)
    : Scheduler(std::move(config), std::move(ids)), m_limits(limits), m_model(model), m_parts(parts)
{
    readPool();
}

SequenceBooks::~SequenceBooks()
{
    for (const SequencePtr &s : m_running)
        if (s->id != 0)
            m_model.release(s->id);
    if (m_prefix)
        m_model.dropBlocks(m_prefix->clear());
}

void SequenceBooks::readPool()
{
    if (!m_parts.kvPool)
        return;
    const KvPoolInfo pool = m_model.kvPool();
    m_granule = std::max(1, pool.blockTokens);
    m_poolTokens = pool.capacityTokens;
}

std::int64_t SequenceBooks::cappedByPool(std::int64_t kvCacheTokens) const
{
    std::int64_t budget = kvCacheTokens > 0 ? kvCacheTokens : 0;
    if (m_poolTokens > 0)
        budget = budget > 0 ? std::min(budget, m_poolTokens) : m_poolTokens;
    return budget / m_granule * m_granule;
}

std::string SequenceBooks::budgetName() const
{
    if (m_poolTokens <= 0)
        return "kv_cache_tokens";
    return "the KV budget (the model's KV pool in whole blocks of " + std::to_string(m_granule) + " tokens)";
}

bool SequenceBooks::fitsKv(std::int64_t tokens) const
{
    // Unreferenced cached blocks are room: they are evicted when needed.
    const std::int64_t kv = kvBudget();
    return kv <= 0 || kvTokens() - unreferencedTokens() + tokens <= kv;
}

Status SequenceBooks::check(const Request &r, TimePoint now) const
{
    if (r.tokens.empty())
        return {StatusCode::InvalidArgument, "input is empty: at least one token is required"};
    const int len = int(r.tokens.size());
    if (r.maxNewTokens < 1)
        return {StatusCode::InvalidArgument,
                "a step-level scheduler generates: max_new_tokens must be at least 1"};
    if (len + r.maxNewTokens > m_limits.maxSequenceLength)
        return {StatusCode::OutOfRange, "input of " + std::to_string(len) + " tokens plus max_new_tokens " +
                                            std::to_string(r.maxNewTokens) + " exceeds the model's " +
                                            std::to_string(m_limits.maxSequenceLength) + " tokens"};
    for (std::size_t i = 0; i < r.tokens.size(); ++i)
        if (r.tokens[i] < 0 || r.tokens[i] >= m_limits.vocabSize)
            return {StatusCode::OutOfRange, "token id " + std::to_string(r.tokens[i]) + " at position " +
                                                std::to_string(i) + " is outside the vocabulary [0, " +
                                                std::to_string(m_limits.vocabSize) + ")"};
    if (const std::int64_t kv = kvBudget(); kv > 0 && roundUp(len + r.maxNewTokens) > kv)
        return {StatusCode::OutOfRange,
                "input plus max_new_tokens needs " + std::to_string(roundUp(len + r.maxNewTokens)) +
                    " KV-cache tokens; " + budgetName() + " is " + std::to_string(kv)};
    if (Status s = checkModel(r); !s)
        return s;
    if (r.deadline && *r.deadline <= now)
        return {StatusCode::DeadlineExceeded, "deadline already passed at submission"};
    return Status::ok();
}

void SequenceBooks::enqueueWaiting(SequencePtr s)
{
    if (!m_parts.priorityOrder || !m_config.continuous.priorityOrder) {
        m_waiting.push_back(std::move(s));
        return;
    }
    // By priority (higher first), then admission order; preempted sequences
    // were put at the front by preempt() and keep their place.
    auto after = std::find_if(m_waiting.begin(), m_waiting.end(), [&](const SequencePtr &w) {
        return !w->joined && w->pending.request.priority < s->pending.request.priority;
    });
    m_waiting.insert(after, std::move(s));
}

Status SequenceBooks::admit(Pending &pending, TimePoint now)
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
    enqueueWaiting(std::move(s));
    m_lastAdmitNeedsWake = !m_workInFlight; // else the step's end decides
    return Status::ok();
}

void SequenceBooks::release(Sequence &s)
{
    if (s.id != 0)
        m_model.release(s.id);
    releaseBlocks(s); // its own tokens leave m_kvTokens; shared blocks stay cached
    s.cached = 0;
    s.id = 0;
}

void SequenceBooks::preempt(std::size_t i)
{
    SequencePtr s = std::move(m_running[i]);
    m_running.erase(m_running.begin() + std::ptrdiff_t(i));
    release(*s); // recompute: prompt + generated are prefilled again on rejoin
    s->planned = 0;
    ++m_preemptions;
    ++m_preemptedUnreported;
    m_waiting.push_front(std::move(s));
}

void SequenceBooks::drop(std::size_t i, Status why, std::vector<Failure> &failed)
{
    SequencePtr s = std::move(m_running[i]);
    m_running.erase(m_running.begin() + std::ptrdiff_t(i));
    release(*s);
    failed.push_back({std::move(s->pending), std::move(why)});
}

std::optional<Status> SequenceBooks::neverFits(const Sequence &s) const
{
    // Prompt plus every token it may generate: what its cache holds at the
    // end. admit() refuses such a request; a KV budget lowered live can make
    // one that was admitted (waiting, preempted or running) impossible.
    const std::int64_t kv = kvBudget();
    const std::int64_t needs = roundUp(std::int64_t(s.prompt()) + std::int64_t(s.maxNew()));
    if (kv <= 0 || needs <= kv)
        return std::nullopt;
    return Status(StatusCode::OutOfRange, "input plus max_new_tokens needs " + std::to_string(needs) +
                                              " KV-cache tokens; " + budgetName() + " is now " +
                                              std::to_string(kv));
}

Scheduler::Poll SequenceBooks::poll(TimePoint now, bool /*draining*/, bool mayDispatch)
{
    Poll result;
    result.wakeAt = sweepWaiting(now, result);
    if (m_workInFlight) {
        result.busy = true; // the step's end (finished()) makes the next decision
        return result;
    }
    m_now = now;
    syncPrefixCache();
    evictOverflow();
    sweepRunning(result);
    if (!mayDispatch || (m_waiting.empty() && m_running.empty()))
        return result;
    StepWork step;
    step.items.reserve(m_running.size() + std::min<std::size_t>(m_waiting.size(), 8));
    decide(now, step, result.failed);
    for (SequencePtr &s : m_running) {
        s->planned = 0;
        s->joining = false;
    }
    if (!step.items.empty())
        dispatch(std::move(step), now, result);
    return result;
}

std::optional<TimePoint> SequenceBooks::sweepWaiting(TimePoint now, Poll &result)
{
    // Cancelled or expired waiting requests leave now; a deadline only
    // applies until the request first runs. So does one that can never fit
    // the KV budget: left at the front it would stall every request behind
    // it (FCFS: nobody overtakes the front).
    std::optional<TimePoint> earliest;
    for (auto it = m_waiting.begin(); it != m_waiting.end();) {
        Sequence &s = **it;
        const auto &deadline = s.pending.request.deadline;
        if (s.isCancelled()) {
            result.failed.push_back(
                {std::move(s.pending), Status(StatusCode::Cancelled, "cancelled while queued")});
        } else if (std::optional<Status> tooBig = neverFits(s)) {
            result.failed.push_back({std::move(s.pending), std::move(*tooBig)});
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
    return earliest;
}

void SequenceBooks::sweepRunning(Poll &result)
{
    // Running sequences that were cancelled, or can no longer finish within
    // a KV budget lowered live, are freed before the next step.
    for (std::size_t i = 0; i < m_running.size();) {
        std::optional<Status> why;
        if (m_running[i]->isCancelled())
            why = Status(StatusCode::Cancelled, "cancelled while running");
        else
            why = neverFits(*m_running[i]);
        if (why)
            drop(i, std::move(*why), result.failed);
        else
            ++i;
    }
}

void SequenceBooks::dispatch(StepWork step, TimePoint now, Poll &result)
{
    step.id = m_ids->next();
    step.preempted = std::exchange(m_preemptedUnreported, 0);
    step.dispatchedAt = now;
    step.configVersion = m_configVersion;
    m_workInFlight = true;
    result.unit.emplace(std::move(step));
}

SequenceBooks::Sequence &SequenceBooks::joinFront(TimePoint now, StepWork &step)
{
    SequencePtr s = std::move(m_waiting.front());
    m_waiting.pop_front();
    s->id = m_nextSequenceId++;
    s->joining = true;
    if (!s->joined) {
        s->joined = true;
        s->firstJoin = now;
    }
    ++step.joined;
    m_running.push_back(std::move(s));
    return *m_running.back();
}

void SequenceBooks::feed(Sequence &s, std::int64_t tokens, StepWork &step)
{
    StepItem item;
    item.sequence = s.id;
    item.tokens.reserve(std::size_t(tokens));
    for (std::int64_t k = 0; k < tokens; ++k)
        item.tokens.push_back(s.contextAt(std::size_t(s.cached + s.planned + k)));
    item.sample = s.cached + s.planned + tokens == std::int64_t(s.contextSize());
    if (std::exchange(s.joining, false))
        item.prefix = s.blocks;
    item.publish = blocksToPublish(s, tokens);
    (s.decoding() ? step.decodeTokens : step.prefillTokens) += int(tokens);
    step.items.push_back(std::move(item));
    s.planned += tokens;
}

SchedulerGauges SequenceBooks::gauges(TimePoint now) const
{
    return {{m_waiting.size()}, m_rate.rate(now), Duration::zero(), iterationGauges()};
}

IterationGauges SequenceBooks::iterationGauges() const
{
    IterationGauges g;
    g.running = m_running.size();
    g.waiting = m_waiting.size();
    g.kvTokens = kvTokens();
    g.prefixCacheTokens = m_prefix ? m_prefix->tokens() : 0;
    g.kvCapacityTokens = kvBudget();
    g.preemptions = m_preemptions;
    return g;
}

void SequenceBooks::reconfigure(const BatchingConfig &config, std::uint64_t version)
{
    m_config = config;
    m_configVersion = version;
    readPool();
}

std::vector<Pending> SequenceBooks::takeAll()
{
    std::vector<SequencePtr> all;
    for (SequencePtr &s : m_waiting)
        all.push_back(std::move(s));
    m_waiting.clear();
    if (!m_workInFlight) { // sequences in a running step finish it first
        for (SequencePtr &s : m_running) {
            release(*s);
            all.push_back(std::move(s));
        }
        m_running.clear();
    }
    std::sort(all.begin(), all.end(),
              [](const SequencePtr &a, const SequencePtr &b) { return a->pending.seq < b->pending.seq; });
    std::vector<Pending> out;
    out.reserve(all.size());
    for (SequencePtr &s : all)
        out.push_back(std::move(s->pending));
    return out;
}

} // namespace bp
