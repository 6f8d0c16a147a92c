#include "batcher.h"

#include <algorithm>
#include <climits>
#include <numeric>

namespace bp {

Batcher::Batcher(BatchingConfig config, ModelLimits limits)
    : m_config(std::move(config)), m_limits(limits), m_queues(std::size_t(m_config.queueCount())),
      m_prioritized(m_queues.size(), 0), m_rate(m_config.adaptiveDelay.period),
      m_effectiveDelay(m_config.adaptiveDelay.enabled ? m_config.adaptiveDelay.maxDelay : m_config.maxQueueDelay)
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

void Batcher::enqueue(int q, Pending &&pending)
{
    if (pending.request.priority != 0)
        ++m_prioritized[std::size_t(q)];
    m_queues[std::size_t(q)].push_back(std::move(pending));
    ++m_size;
}

Status Batcher::admit(Pending &pending, TimePoint now)
{
    m_lastAdmitNeedsWake = false;
    if (Status s = check(pending.request, now); !s)
        return s;
    if (m_size >= std::size_t(m_config.queueCapacity))
        return {StatusCode::QueueFull, "admission queue is full (" +
                                           std::to_string(m_config.queueCapacity) + " requests)"};
    m_lastNow = now;
    m_rate.arrival(now);
    const int q = route(int(pending.request.tokens.size()), now);
    if (const auto &deadline = pending.request.deadline) {
        if (m_deadlines.empty() || *deadline < *m_deadlines.begin())
            m_lastAdmitNeedsWake = true;
        m_deadlines.insert(*deadline);
    }
    enqueue(q, std::move(pending));
    const std::size_t depth = m_queues[std::size_t(q)].size();
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
    for (std::size_t qi = 0; qi < m_queues.size(); ++qi) {
        auto &queue = m_queues[qi];
        for (auto it = queue.begin(); it != queue.end();) {
            const auto &d = it->request.deadline;
            if (d && *d <= now) {
                if (it->request.priority != 0)
                    --m_prioritized[qi];
                forgetDeadline(*it);
                out.push_back(std::move(*it));
                it = queue.erase(it);
                --m_size;
                continue;
            }
            ++it;
        }
    }
}

void Batcher::take(int q, std::size_t count, TimePoint now, std::vector<Pending> &out)
{
    auto &queue = m_queues[std::size_t(q)];
    auto &prioritized = m_prioritized[std::size_t(q)];
    if (prioritized == 0) {
        for (std::size_t i = 0; i < count; ++i) {
            out.push_back(std::move(queue.front()));
            queue.pop_front();
        }
        return;
    }
    // Effective priority = priority + whole aging periods waited: a request
    // of priority p waits at most (p_max - p) × aging behind higher ones.
    std::vector<std::size_t> order(queue.size());
    std::iota(order.begin(), order.end(), 0);
    auto effective = [&](std::size_t i) {
        const Request &r = queue[i].request;
        return std::int64_t(r.priority) + (now - r.arrival) / m_config.priorityAging;
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return effective(a) > effective(b); });
    std::vector<bool> taken(queue.size(), false);
    for (std::size_t i = 0; i < count; ++i)
        taken[order[i]] = true;
    std::deque<Pending> rest;
    for (std::size_t i = 0; i < queue.size(); ++i) {
        if (taken[i]) {
            if (queue[i].request.priority != 0)
                --prioritized;
            out.push_back(std::move(queue[i]));
        } else {
            rest.push_back(std::move(queue[i]));
        }
    }
    queue.swap(rest);
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
        v.size = m_queues[i].size();
        if (!m_queues[i].empty())
            v.oldestArrival = m_queues[i].front().request.arrival;
        v.fill = fillOf(int(i));
        v.isStatic = hybrid && i + 1 < m_queues.size();
        v.delay = v.isStatic ? m_config.hybrid.staticMaxWait : m_effectiveDelay;
    }
    Decision d = decide(views, m_config, now, draining);
    if (!d.dispatch) {
        result.wakeAt = d.wakeAt;
        if (const auto deadline = earliestDeadline(); deadline && (!result.wakeAt || *deadline < *result.wakeAt))
            result.wakeAt = deadline;
        return result;
    }

    const int q = d.dispatch->queue;
    const auto count = std::min<std::size_t>(std::size_t(d.dispatch->count), m_queues[std::size_t(q)].size());
    Batch batch;
    batch.id = m_nextBatchId++;
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
    result.batch = std::move(batch);
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
    // Re-bucket: merge all queues back into arrival order, then redistribute.
    std::vector<Pending> all = takeAll();
    std::stable_sort(all.begin(), all.end(), [](const Pending &a, const Pending &b) {
        return a.request.arrival < b.request.arrival;
    });
    m_queues.clear();
    m_queues.resize(std::size_t(m_config.queueCount()));
    m_prioritized.assign(m_queues.size(), 0);
    for (Pending &p : all) {
        if (p.request.deadline)
            m_deadlines.insert(*p.request.deadline);
        enqueue(route(int(p.request.tokens.size()), m_lastNow), std::move(p));
    }
}

std::vector<Pending> Batcher::takeAll()
{
    std::vector<Pending> out;
    out.reserve(m_size);
    for (auto &queue : m_queues) {
        for (Pending &p : queue)
            out.push_back(std::move(p));
        queue.clear();
    }
    std::fill(m_prioritized.begin(), m_prioritized.end(), 0);
    m_size = 0;
    m_deadlines.clear();
    return out;
}

std::vector<std::size_t> Batcher::depths() const
{
    std::vector<std::size_t> d;
    d.reserve(m_queues.size());
    for (const auto &q : m_queues)
        d.push_back(q.size());
    return d;
}

} // namespace bp
