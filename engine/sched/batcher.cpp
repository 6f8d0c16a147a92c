#include "batcher.h"

#include "engine/sched/outcome.h"

#include <algorithm>
#include <climits>

namespace bp {

Batcher::Batcher(BatchingConfig config, ModelLimits limits, std::shared_ptr<UnitIds> ids)
    : Scheduler(std::move(config), std::move(ids)), m_limits(limits),
      m_queues(std::size_t(m_config.queueCount())), m_rate(m_config.adaptiveDelay.period),
      m_effectiveDelay(m_config.adaptiveDelay.enabled ? m_config.adaptiveDelay.maxDelay
                                                      : m_config.maxQueueDelay)
{
}

Status Batcher::check(const Request &r, TimePoint now) const
{
    if (r.tokens.empty())
        return {StatusCode::InvalidArgument, "input is empty: at least one token is required"};
    const int len = int(r.tokens.size());
    if (len > m_limits.maxSequenceLength)
        return {StatusCode::OutOfRange, "input has " + std::to_string(len) +
                                            " tokens; the model accepts at most " +
                                            std::to_string(m_limits.maxSequenceLength)};
    if (m_config.policy == PolicyKind::Static && len > m_config.staticPaddedLength)
        return {StatusCode::OutOfRange, "input has " + std::to_string(len) +
                                            " tokens; the static policy pads to " +
                                            std::to_string(m_config.staticPaddedLength)};
    for (std::size_t i = 0; i < r.tokens.size(); ++i) {
        const TokenId t = r.tokens[i];
        if (t < 0 || t >= m_limits.vocabSize)
            return {StatusCode::OutOfRange, "token id " + std::to_string(t) + " at position " +
                                                std::to_string(i) + " is outside the vocabulary [0, " +
                                                std::to_string(m_limits.vocabSize) + ")"};
    }
    if (r.maxNewTokens < 0)
        return {StatusCode::InvalidArgument, "max_new_tokens must not be negative"};
    if (r.deadline && *r.deadline <= now)
        return {StatusCode::DeadlineExceeded, "deadline already passed at submission"};
    return Status::ok();
}

int Batcher::fillOf(int q) const
{
    const int cap = m_config.memoryBatchLimit > 0 ? m_config.memoryBatchLimit : INT_MAX;
    switch (m_config.policy) {
    case PolicyKind::None: return 1;
    case PolicyKind::Static: return std::min(m_config.staticBatchSize, cap);
    case PolicyKind::Hybrid:
        if (q < int(m_config.hybrid.staticSizes.size()))
            return std::min(m_config.hybrid.staticSizes[std::size_t(q)], cap);
        [[fallthrough]];
    default: return std::min(m_config.maxBatchSize, cap);
    }
}

void Batcher::updateEffectiveDelay(TimePoint now)
{
    const AdaptiveDelayConfig &a = m_config.adaptiveDelay;
    m_effectiveDelay = a.enabled ? adaptiveDelay(m_rate.rate(now), fillOf(int(m_queues.size()) - 1), a)
                                 : m_config.maxQueueDelay;
}

int Batcher::route(int length, TimePoint now)
{
    if (m_config.policy != PolicyKind::Hybrid)
        return m_config.bucketFor(length);
    const HybridConfig &h = m_config.hybrid;
    const int dynamicLayer = int(h.staticSizes.size());
    const double rate = m_rate.rate(now);
    if (length > h.maxStaticLength || rate < h.minStaticRate || rate <= 0)
        return dynamicLayer;
    // the largest static size the current rate fills within the queue delay
    int chosen = 0;
    for (int i = 0; i < dynamicLayer; ++i)
        if (double(fillOf(i)) / rate <= toSeconds(m_effectiveDelay))
            chosen = i;
    return chosen;
}

Batcher::Level &Batcher::Queue::levelFor(int priority)
{
    for (Level &level : levels)
        if (level.priority == priority)
            return level;
    return levels.emplace_back(Level{priority, {}});
}

const Pending &Batcher::Queue::oldest() const
{
    const Pending *best = nullptr;
    for (const Level &level : levels)
        if (!best || level.items.front().seq < best->seq)
            best = &level.items.front();
    return *best;
}

void Batcher::enqueue(int q, Pending &&pending)
{
    Queue &queue = m_queues[std::size_t(q)];
    queue.levelFor(pending.request.priority).items.push_back(std::move(pending));
    ++queue.size;
    ++m_size;
}

Status Batcher::admit(Pending &pending, TimePoint now)
{
    m_lastAdmitNeedsWake = false;
    if (Status s = check(pending.request, now); !s)
        return s;
    if (m_size >= std::size_t(m_config.queueCapacity))
        return {StatusCode::QueueFull,
                "admission queue is full (" + std::to_string(m_config.queueCapacity) + " requests)"};
    m_lastNow = now;
    m_rate.arrival(now);
    const int q = route(int(pending.request.tokens.size()), now);
    if (const auto &deadline = pending.request.deadline) {
        if (m_deadlines.empty() || *deadline < *m_deadlines.begin())
            m_lastAdmitNeedsWake = true;
        m_deadlines.insert(*deadline);
    }
    pending.seq = m_nextSeq++;
    enqueue(q, std::move(pending));
    const std::size_t depth = m_queues[std::size_t(q)].size;
    if (depth == 1 || depth == std::size_t(fillOf(q)) || m_config.policy == PolicyKind::None)
        m_lastAdmitNeedsWake = true;
    return Status::ok();
}

void Batcher::forgetDeadline(const Pending &pending)
{
    if (pending.request.deadline)
        m_deadlines.erase(m_deadlines.find(*pending.request.deadline));
}

std::optional<TimePoint> Batcher::earliestDeadline() const
{
    if (m_deadlines.empty())
        return std::nullopt;
    return *m_deadlines.begin();
}

void Batcher::expire(TimePoint now, std::vector<Pending> &out)
{
    // Exact: the scan below runs only when some queued request has expired.
    if (m_deadlines.empty() || now < *m_deadlines.begin())
        return;
    for (Queue &queue : m_queues) {
        for (Level &level : queue.levels) {
            std::deque<Pending> kept;
            for (Pending &p : level.items) {
                if (p.request.deadline && *p.request.deadline <= now) {
                    forgetDeadline(p);
                    out.push_back(std::move(p));
                    --queue.size;
                    --m_size;
                } else {
                    kept.push_back(std::move(p));
                }
            }
            level.items.swap(kept);
        }
        std::erase_if(queue.levels, [](const Level &level) { return level.items.empty(); });
    }
}

void Batcher::take(int q, std::size_t count, TimePoint now, std::vector<Pending> &out)
{
    Queue &queue = m_queues[std::size_t(q)];
    const std::size_t first = out.size();
    if (queue.levels.size() == 1) {
        std::deque<Pending> &items = queue.levels.front().items;
        for (std::size_t i = 0; i < count; ++i) {
            out.push_back(std::move(items.front()));
            items.pop_front();
        }
    } else {
        // Effective priority = priority + whole aging periods waited: a
        // request of priority p waits at most (p_max - p) × aging behind
        // higher ones. The best of each level is its front.
        auto effective = [&](const Pending &p) {
            return std::int64_t(p.request.priority) + (now - p.request.arrival) / m_config.priorityAging;
        };
        for (std::size_t i = 0; i < count; ++i) {
            Level *best = nullptr;
            std::int64_t bestValue = 0;
            for (Level &level : queue.levels) {
                if (level.items.empty())
                    continue;
                const std::int64_t value = effective(level.items.front());
                if (!best || value > bestValue ||
                    (value == bestValue && level.items.front().seq < best->items.front().seq)) {
                    best = &level;
                    bestValue = value;
                }
            }
            out.push_back(std::move(best->items.front()));
            best->items.pop_front();
        }
        // A batch lists its members in admission order, as the queue held them.
        std::sort(out.begin() + std::ptrdiff_t(first), out.end(),
                  [](const Pending &a, const Pending &b) { return a.seq < b.seq; });
    }
    queue.size -= count;
    std::erase_if(queue.levels, [](const Level &level) { return level.items.empty(); });
}

Batcher::Poll Batcher::poll(TimePoint now, bool draining, bool mayDispatch)
{
    Poll result;
    m_lastNow = now;
    expire(now, result.expired);
    if (!mayDispatch) {
        result.wakeAt = earliestDeadline();
        return result;
    }
    updateEffectiveDelay(now);

    std::vector<QueueView> views(m_queues.size());
    const bool hybrid = m_config.policy == PolicyKind::Hybrid;
    for (std::size_t i = 0; i < m_queues.size(); ++i) {
        QueueView &v = views[i];
        v.size = m_queues[i].size;
        if (v.size > 0)
            v.oldestArrival = m_queues[i].oldest().request.arrival;
        v.fill = fillOf(int(i));
        v.isStatic = hybrid && i + 1 < m_queues.size();
        v.delay = v.isStatic ? m_config.hybrid.staticMaxWait : m_effectiveDelay;
    }
    Decision d = decide(views, m_config, now, draining);
    if (!d.dispatch) {
        result.wakeAt = d.wakeAt;
        if (const auto deadline = earliestDeadline();
            deadline && (!result.wakeAt || *deadline < *result.wakeAt))
            result.wakeAt = deadline;
        return result;
    }

    const int q = d.dispatch->queue;
    const auto count = std::min<std::size_t>(std::size_t(d.dispatch->count), m_queues[std::size_t(q)].size);
    Batch batch;
    batch.id = m_ids->next();
    batch.bucket = q;
    batch.reason = d.dispatch->reason;
    batch.policy = m_config.policy;
    batch.dispatchedAt = now;
    batch.configVersion = m_configVersion;
    batch.items.reserve(count);
    take(q, count, now, batch.items);
    m_size -= count;
    TimePoint lastArrival{};
    int longest = 0;
    for (const Pending &p : batch.items) {
        lastArrival = std::max(lastArrival, p.request.arrival);
        longest = std::max(longest, int(p.request.tokens.size()));
        forgetDeadline(p);
    }
    batch.intendedAt = d.dispatch->intendedAt.value_or(lastArrival);
    if (batch.reason == DispatchReason::Drain)
        batch.intendedAt = now;
    if (m_config.policy == PolicyKind::Static)
        batch.paddedLength = std::max(m_config.staticPaddedLength, longest);
    else if (views[std::size_t(q)].isStatic) // hybrid static layer: one fixed shape
        batch.paddedLength = std::max(m_config.hybrid.maxStaticLength, longest);
    else
        batch.paddedLength = longest;
    result.unit.emplace(std::move(batch));
    return result;
}

void Batcher::reconfigure(const BatchingConfig &config, std::uint64_t version)
{
    const BatchingConfig old = m_config;
    m_config = config;
    m_configVersion = version;
    m_rate.setPeriod(config.adaptiveDelay.period);
    if (!config.adaptiveDelay.enabled)
        m_effectiveDelay = config.maxQueueDelay;
    if (old.queueCount() == config.queueCount() && old.bucketEdges == config.bucketEdges &&
        old.policy == config.policy && old.hybrid == config.hybrid)
        return;
    // Re-bucket: merge all queues back into admission order, then redistribute.
    std::vector<Pending> all = takeAll();
    m_queues.clear();
    m_queues.resize(std::size_t(m_config.queueCount()));
    for (Pending &p : all) {
        if (p.request.deadline)
            m_deadlines.insert(*p.request.deadline);
        enqueue(route(int(p.request.tokens.size()), m_lastNow), std::move(p));
    }
}

std::vector<Pending> Batcher::takeAll()
{
    // Every level is in admission order: a k-way merge of their fronts.
    std::vector<std::deque<Pending> *> lists;
    for (Queue &queue : m_queues)
        for (Level &level : queue.levels)
            if (!level.items.empty())
                lists.push_back(&level.items);
    auto later = [](const std::deque<Pending> *a, const std::deque<Pending> *b) {
        return a->front().seq > b->front().seq;
    };
    std::make_heap(lists.begin(), lists.end(), later);
    std::vector<Pending> out;
    out.reserve(m_size);
    while (!lists.empty()) {
        std::pop_heap(lists.begin(), lists.end(), later);
        std::deque<Pending> *list = lists.back();
        out.push_back(std::move(list->front()));
        list->pop_front();
        if (list->empty())
            lists.pop_back();
        else
            std::push_heap(lists.begin(), lists.end(), later);
    }
    for (Queue &queue : m_queues) {
        queue.levels.clear();
        queue.size = 0;
    }
    m_size = 0;
    m_deadlines.clear();
    return out;
}

bool Batcher::finished(WorkUnit &unit, UnitRun &run, TimePoint /*now*/, UnitDone &done)
{
    batchDone(*unit.batch(), run, done);
    return false;
}

SchedulerGauges Batcher::gauges(TimePoint now) const
{
    return {depths(), arrivalRate(now), m_effectiveDelay, std::nullopt};
}

std::vector<std::size_t> Batcher::depths() const
{
    std::vector<std::size_t> d;
    d.reserve(m_queues.size());
    for (const Queue &q : m_queues)
        d.push_back(q.size);
    return d;
}

} // namespace bp
