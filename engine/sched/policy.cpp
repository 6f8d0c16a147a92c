#include "policy.h"

#include <algorithm>

namespace bp {

namespace {

Decision decideNone(std::span<const QueueView> queues)
{
    // One request, the oldest of all queues, as soon as asked.
    int best = -1;
    for (int i = 0; i < int(queues.size()); ++i) {
        const QueueView &q = queues[std::size_t(i)];
        if (q.size > 0 && (best < 0 || q.oldestArrival < queues[std::size_t(best)].oldestArrival))
            best = i;
    }
    if (best < 0)
        return {};
    return {DispatchDecision{best, 1, DispatchReason::Single, std::nullopt}, std::nullopt};
}

Decision decideStatic(std::span<const QueueView> queues, const BatchingConfig &c, bool draining)
{
    const QueueView &q = queues[0];
    const auto n = std::size_t(q.fill > 0 ? q.fill : c.staticBatchSize);
    if (q.size >= n)
        return {DispatchDecision{0, int(n), DispatchReason::StaticFull, std::nullopt}, std::nullopt};
    if (draining && q.size > 0 && c.staticFlushOnDrain)
        return {DispatchDecision{0, int(q.size), DispatchReason::Drain, std::nullopt}, std::nullopt};
    return {}; // waits for N, however long that takes: that is static batching
}

// dynamic is bucketed with a single queue; hybrid is bucketed whose static
// queues carry their own fill and wait.
Decision decideDynamic(std::span<const QueueView> queues, const BatchingConfig &c, TimePoint now,
                       bool draining)
{
    int best = -1;
    std::size_t bestFill = 0;
    Duration bestOverdue{};
    DispatchReason bestReason = DispatchReason::Full;
    std::optional<TimePoint> wakeAt;
    for (int i = 0; i < int(queues.size()); ++i) {
        const QueueView &q = queues[std::size_t(i)];
        if (q.size == 0)
            continue;
        std::size_t fill = std::size_t(q.fill > 0 ? q.fill : c.maxBatchSize);
        const TimePoint due = q.oldestArrival + q.delay.value_or(c.maxQueueDelay);
        const Duration overdue = now - due;
        DispatchReason reason;
        // Triton's dynamic batcher (dynamic_batch_scheduler.cc): batches grow
        // to the largest preferred size; with fewer queued, the largest
        // preferred size reached leaves at once, and the rest wait out
        // max_queue_delay.
        const std::vector<int> &preferred = c.server.triton.preferredBatchSize;
        if (c.server.kind == ServerKind::Triton && !preferred.empty() && !q.isStatic) {
            const auto largest = std::min(fill, std::size_t(preferred.back()));
            std::size_t reached = 0;
            for (int p : preferred)
                if (std::size_t(p) <= q.size)
                    reached = std::min(largest, std::size_t(p));
            if (q.size < largest && reached > 0 && now < due)
                fill = reached;
            else
                fill = largest;
        }
        if (q.size >= fill)
            reason = q.isStatic ? DispatchReason::StaticFull : DispatchReason::Full;
        else if (now >= due)
            reason = DispatchReason::DelayExpired;
        else if (draining)
            reason = DispatchReason::Drain;
        else {
            wakeAt = wakeAt ? std::min(*wakeAt, due) : due;
            continue;
        }
        // The most overdue bucket goes first; a full bucket competes with the
        // same measure, so a hot short bucket cannot starve a cold long one.
        if (best < 0 || overdue > bestOverdue) {
            best = i;
            bestOverdue = overdue;
            bestReason = reason;
            bestFill = fill;
        }
    }
    if (best < 0)
        return {std::nullopt, wakeAt};
    const QueueView &q = queues[std::size_t(best)];
    DispatchDecision d{best, int(std::min(q.size, bestFill)), bestReason, std::nullopt};
    if (bestReason == DispatchReason::DelayExpired)
        d.intendedAt = q.oldestArrival + q.delay.value_or(c.maxQueueDelay);
    return {d, std::nullopt};
}

} // namespace

Decision decide(std::span<const QueueView> queues, const BatchingConfig &config, TimePoint now, bool draining)
{
    if (queues.empty())
        return {};
    switch (config.policy) {
    case PolicyKind::None: return decideNone(queues);
    case PolicyKind::Static: return decideStatic(queues, config, draining);
    case PolicyKind::Dynamic:
    case PolicyKind::Bucketed:
    case PolicyKind::Hybrid: return decideDynamic(queues, config, now, draining);
    case PolicyKind::Continuous: return {}; // iteration-level: ContinuousScheduler, not decide()
    }
    return {};
}

} // namespace bp
