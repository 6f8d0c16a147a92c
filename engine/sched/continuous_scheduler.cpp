#include "continuous_scheduler.h"
#include "continuous_sequence.h"
#include "sequence_ends.h"

#include "engine/exec/outcome.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

namespace bp {

ContinuousScheduler::ContinuousScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                                         std::shared_ptr<UnitIds> ids)
    : Scheduler(std::move(config), std::move(ids)), m_limits(limits), m_model(model)
{
    readPool();
}

void ContinuousScheduler::readPool()
{
    const KvPoolInfo pool = m_model.kvPool();
    m_granule = std::max(1, pool.blockTokens);
    m_poolTokens = pool.capacityTokens;
}

std::int64_t ContinuousScheduler::kvBudget() const
{
    const std::int64_t kv = m_config.continuous.kvCacheTokens;
    std::int64_t budget = kv > 0 ? kv : 0;
    if (m_poolTokens > 0)
        budget = budget > 0 ? std::min(budget, m_poolTokens) : m_poolTokens;
    return budget / m_granule * m_granule;
}

std::string ContinuousScheduler::budgetName() const
{
    if (m_poolTokens <= 0)
        return "kv_cache_tokens";
    return "the KV budget (the model's KV pool in whole blocks of " + std::to_string(m_granule) + " tokens)";
}

std::int64_t ContinuousScheduler::kvGrowth(const Sequence &s, std::int64_t tokens) const
{
    return roundUp(s.cached + tokens) - roundUp(s.cached);
}

ContinuousScheduler::~ContinuousScheduler()
{
    for (const SequencePtr &s : m_running)
        m_model.release(s->id);
    if (m_prefix)
        m_model.dropBlocks(m_prefix->clear());
}

Status ContinuousScheduler::check(const Request &r, TimePoint now) const
{
    const ContinuousConfig &c = m_config.continuous;
    if (r.tokens.empty())
        return {StatusCode::InvalidArgument, "input is empty: at least one token is required"};
    const int len = int(r.tokens.size());
    if (r.maxNewTokens < 1)
        return {StatusCode::InvalidArgument,
                "policy continuous generates: max_new_tokens must be at least 1"};
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
    if (!c.chunkedPrefill && len > c.maxNumBatchedTokens)
        return {StatusCode::OutOfRange, "input has " + std::to_string(len) +
                                            " tokens; without chunked prefill a prompt must fit "
                                            "max_num_batched_tokens (" +
                                            std::to_string(c.maxNumBatchedTokens) + ")"};
    if (r.deadline && *r.deadline <= now)
        return {StatusCode::DeadlineExceeded, "deadline already passed at submission"};
    return Status::ok();
}

void ContinuousScheduler::enqueueWaiting(SequencePtr s)
{
    if (!m_config.continuous.priorityOrder) {
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

Status ContinuousScheduler::admit(Pending &pending, TimePoint now)
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

bool ContinuousScheduler::fitsKv(std::int64_t tokens) const
{
    // Unreferenced cached blocks are room: they are evicted when needed.
    const std::int64_t kv = kvBudget();
    return kv <= 0 || kvTokens() - unreferencedTokens() + tokens <= kv;
}

void ContinuousScheduler::release(Sequence &s)
{
    if (s.id != 0)
        m_model.release(s.id);
    releaseBlocks(s); // its own tokens leave m_kvTokens; shared blocks stay cached
    s.cached = 0;
    s.id = 0;
}

void ContinuousScheduler::preempt(std::size_t i)
{
    SequencePtr s = std::move(m_running[i]);
    m_running.erase(m_running.begin() + std::ptrdiff_t(i));
    release(*s); // recompute: prompt + generated are prefilled again on rejoin
    ++m_preemptions;
    ++m_preemptedUnreported;
    m_waiting.push_front(std::move(s));
}

std::optional<Status> ContinuousScheduler::neverFits(const Sequence &s) const
{
    // Prompt plus every token it may generate: what its cache holds at the
    // end. admit() refuses such a request; kv_cache_tokens lowered live can
    // make one that was admitted (waiting, preempted or running) impossible.
    const std::int64_t kv = kvBudget();
    const std::int64_t needs =
        roundUp(std::int64_t(s.pending.request.tokens.size()) + std::int64_t(s.pending.request.maxNewTokens));
    if (kv <= 0 || needs <= kv)
        return std::nullopt;
    return Status(StatusCode::OutOfRange, "input plus max_new_tokens needs " + std::to_string(needs) +
                                              " KV-cache tokens; " + budgetName() + " is now " + std::to_string(kv));
}

Scheduler::Poll ContinuousScheduler::poll(TimePoint now, bool /*draining*/, bool mayDispatch)
{
    Poll result;
    const ContinuousConfig &c = m_config.continuous;
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
    result.wakeAt = earliest;
    if (m_workInFlight) {
        result.busy = true; // the step's end (finished()) makes the next decision
        return result;
    }
    m_now = now;
    syncPrefixCache();
    evictOverflow();
    // Running sequences that were cancelled, or can no longer finish within
    // a KV budget lowered live, are freed before the next step.
    for (std::size_t i = 0; i < m_running.size();) {
        std::optional<Status> why;
        if (m_running[i]->isCancelled())
            why = Status(StatusCode::Cancelled, "cancelled while running");
        else
            why = neverFits(*m_running[i]);
        if (why) {
            SequencePtr s = std::move(m_running[i]);
            m_running.erase(m_running.begin() + std::ptrdiff_t(i));
            release(*s);
            result.failed.push_back({std::move(s->pending), std::move(*why)});
        } else {
            ++i;
        }
    }
    if (!mayDispatch || (m_waiting.empty() && m_running.empty()))
        return result;

    // KV budget: every running sequence needs room for at least one more
    // token; preempt the most recently joined until they all have it.
    int preemptedNow = 0;
    auto nextTokens = [&] {
        std::int64_t n = 0;
        for (const SequencePtr &s : m_running)
            n += kvGrowth(*s, 1);
        return n;
    };
    while (m_running.size() > 1 && !fitsKv(nextTokens())) {
        preempt(m_running.size() - 1);
        ++preemptedNow;
    }

    auto step = std::make_unique<StepWork>();
    std::int64_t budget = c.maxNumBatchedTokens;
    std::int64_t kvReserved = 0;
    std::int64_t kvPinned = 0; // of kvReserved: cached blocks joining sequences start from
    // Unreferenced cached blocks count as room (evicted when needed); a
    // joining sequence that starts from some of them reserves them.
    const std::int64_t budgetKv = kvBudget();
    const std::int64_t kvRoomTotal = budgetKv > 0 ? budgetKv - (kvTokens() - unreferencedTokens())
                                                  : std::numeric_limits<std::int64_t>::max() / 2;
    std::vector<bool> inStep(m_running.size(), false);

    // Tokens `s` can feed now: a decode 1, a prefill a chunk (or all of it).
    auto take = [&](const Sequence &s) -> std::int64_t {
        const std::int64_t remaining = s.remaining();
        // The most tokens of `s` the KV room takes: whole blocks of it, after
        // the part of a block `s` already holds.
        const std::int64_t kvRoom = kvRoomTotal - kvReserved;
        const std::int64_t kvFit =
            kvRoom < 0 ? 0 : roundUp(s.cached) + kvRoom / m_granule * m_granule - s.cached;
        const std::int64_t room = std::min(budget, kvFit);
        if (s.decoding())
            return room >= 1 ? 1 : 0;
        if (c.chunkedPrefill)
            return std::max<std::int64_t>(0, std::min({remaining, std::int64_t(c.prefillChunk), room}));
        if (remaining <= room)
            return remaining;
        // Without chunked prefill a prompt is fed whole; one that can never
        // fit a step (a preempted sequence's prompt + generated tokens, or a
        // budget lowered live) is fed in budget-sized pieces instead of
        // waiting forever.
        return remaining > c.maxNumBatchedTokens ? std::max<std::int64_t>(0, room) : 0;
    };
    auto add = [&](Sequence &s, std::int64_t tokens, bool joining) {
        StepItem item;
        item.sequence = s.id;
        item.tokens.reserve(std::size_t(tokens));
        for (std::int64_t k = 0; k < tokens; ++k)
            item.tokens.push_back(s.contextAt(std::size_t(s.cached + k)));
        item.sample = s.cached + tokens == std::int64_t(s.contextSize());
        if (joining)
            item.prefix = s.blocks;
        item.publish = blocksToPublish(s, tokens);
        (s.decoding() ? step->decodeTokens : step->prefillTokens) += int(tokens);
        step->items.push_back(std::move(item));
        budget -= tokens;
        kvReserved += kvGrowth(s, tokens);
    };
    auto runRunning = [&](bool decodes) {
        for (std::size_t i = 0; i < m_running.size() && budget > 0; ++i) {
            Sequence &s = *m_running[i];
            if (inStep[i] || s.decoding() != decodes)
                continue;
            if (const std::int64_t n = take(s); n > 0) {
                add(s, n, false);
                inStep[i] = true;
            }
        }
    };
    auto join = [&] {
        // A sequence preempted by this decision is at the front of the queue:
        // rejoining now would take the room its preemption made for the
        // running decodes and be preempted again at the next step (issue 23
        // item 6). It rejoins at a later decision; FCFS, nobody overtakes it.
        if (preemptedNow > 0)
            return;
        while (!m_waiting.empty() && m_running.size() < std::size_t(c.maxNumSeqs) && budget > 0) {
            Sequence &s = *m_waiting.front();
            // The cached blocks it can start from: they skip prefill, and
            // the unreferenced ones among them stop being room.
            const PrefixCache::Match hit = lookupPrefix(s);
            const std::int64_t hitTokens = m_prefix ? hit.tokens(m_prefix->blockTokens()) : 0;
            const std::int64_t pinned =
                m_prefix ? std::int64_t(hit.unreferenced) * m_prefix->blockTokens() : 0;
            // Join only when the KV cache can hold its whole context and a
            // first new token beside what this step adds: joining with less
            // would only be preempted again at once.
            if (!fitsKv(kvReserved + pinned + roundUp(std::int64_t(s.contextSize()) - hitTokens + 1)))
                break;
            s.cached = hitTokens;
            kvReserved += pinned;
            const std::int64_t n = take(s);
            if (n <= 0) {
                s.cached = 0;
                kvReserved -= pinned;
                break; // FCFS: the front waits for room; nobody overtakes it
            }
            kvPinned += pinned;
            if (m_prefix) {
                m_prefix->acquire(hit.blocks, now);
                s.blocks = hit.blocks;
                s.caching = true;
                step->prefixQueryTokens += std::int64_t(s.contextSize());
                step->prefixHitTokens += hitTokens;
                if (!s.joined)
                    s.cachedPromptTokens = int(hitTokens);
            }
            SequencePtr joining = std::move(m_waiting.front());
            m_waiting.pop_front();
            joining->id = m_nextSequenceId++;
            if (!joining->joined) {
                joining->joined = true;
                joining->firstJoin = now;
            }
            ++step->joined;
            add(*joining, n, true);
            m_running.push_back(std::move(joining));
            inStep.push_back(true);
        }
    };
    if (c.decodeFirst) {
        runRunning(true);
        runRunning(false);
        join();
    } else {
        runRunning(false);
        join();
        runRunning(true);
    }
    if (step->items.empty()) {
        // Nothing can run: only possible when kv_cache_tokens was lowered
        // live below what the oldest running sequence holds. Fail it rather
        // than wait forever (it cannot be preempted: it would never fit).
        if (!m_running.empty() && budgetKv > 0 && !fitsKv(m_granule)) {
            SequencePtr s = std::move(m_running.front());
            m_running.erase(m_running.begin());
            release(*s);
            result.failed.push_back({std::move(s->pending),
                                     Status(StatusCode::ResourceExhausted,
                                            "kv_cache_tokens was lowered below what this sequence holds")});
        }
        return result;
    }
    if (m_poolTokens > 0)
        makeRoom(kvReserved - kvPinned);
    step->id = m_ids->next();
    step->preempted = std::exchange(m_preemptedUnreported, 0);
    step->dispatchedAt = now;
    step->configVersion = m_configVersion;
    m_workInFlight = true;
    result.unit.emplace(std::move(*step));
    return result;
}

SchedulerGauges ContinuousScheduler::gauges(TimePoint now) const
{
    return {{m_waiting.size()}, m_rate.rate(now), Duration::zero(), iterationGauges()};
}

IterationGauges ContinuousScheduler::iterationGauges() const
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

void ContinuousScheduler::reconfigure(const BatchingConfig &config, std::uint64_t version)
{
    // Nothing is dropped: a smaller max_num_seqs stops joins until the
    // running set is below it, a smaller KV budget preempts at the next step.
    m_config = config;
    m_configVersion = version;
    readPool();
}

std::vector<Pending> ContinuousScheduler::takeAll()
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
    return pendingInOrder(std::move(all));
}

} // namespace bp
