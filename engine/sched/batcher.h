// The request-level Scheduler: the policies none, static, dynamic, bucketed
// and hybrid, with the adaptive queue delay. Admission (validation and the
// bounded queue), deadline expiry, live reconfiguration and batch formation,
// without threads. The Engine drives it through the Scheduler seam under its
// lock with the real clock; tests, the replayer and the simulator drive it
// directly with fake or virtual time. Not thread-safe.
// lastAdmitNeedsWake() is true after an admit that made a decision possible
// earlier: the first request in a queue, a batch filled, or an earlier
// deadline.
#pragma once

#include "adaptive.h"
#include "rate_estimator.h"
#include "scheduler.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <vector>

namespace bp {

class Batcher : public Scheduler {
public:
    // `ids`: the engine's unit ids (null: a fresh sequence from 1).
    Batcher(BatchingConfig config, ModelLimits limits, std::shared_ptr<UnitIds> ids = nullptr);

    // Admission: not empty, not too long, every token in the vocabulary,
    // deadline not passed, room in the queue.
    Status admit(Pending &pending, TimePoint now) override;

    // One scheduling step: expires overdue requests, then (when mayDispatch,
    // i.e. an executor is free) asks the policy for a batch.
    Poll poll(TimePoint now, bool draining, bool mayDispatch = true) override;
    // A batch ran: every member ends with it. Nothing is learnt from the
    // outcome; the members' answers are built from the results (outcome.h).
    bool finished(WorkUnit &unit, UnitRun &run, TimePoint now, UnitDone &done) override;

    // Validated by the caller. Re-buckets queued requests when the queues
    // change, keeping each queue in admission order (a merge of the
    // already-ordered queues, O(n log queues)).
    void reconfigure(const BatchingConfig &config, std::uint64_t version) override;
    std::vector<Pending> takeAll() override;

    std::size_t size() const override { return m_size; }
    SchedulerGauges gauges(TimePoint now) const override;
    // Queued requests per queue, in the config's queue order.
    std::vector<std::size_t> depths() const;
    double arrivalRate(TimePoint now) const { return m_rate.rate(now); }
    // The adaptive delay when enabled, else the config's max_queue_delay.
    Duration effectiveDelay() const { return m_effectiveDelay; }

private:
    Status check(const Request &request, TimePoint now) const;
    // One FIFO per priority level present in a queue. Within a level the
    // front has waited longest, so it has the level's highest effective
    // priority (priority + whole aging periods waited): the best request of
    // the whole queue is at the front of some level, and taking one costs
    // a look at each level's front instead of a sort of the queue.
    struct Level {
        int priority = 0;
        std::deque<Pending> items;
    };
    struct Queue {
        std::vector<Level> levels; // non-empty levels only, any order
        std::size_t size = 0;
        Level &levelFor(int priority);
        // the earliest admitted request; requires size > 0
        const Pending &oldest() const;
    };

    void expire(TimePoint now, std::vector<Pending> &out);
    int route(int length, TimePoint now);
    int fillOf(int queue) const;
    void updateEffectiveDelay(TimePoint now);
    void enqueue(int queue, Pending &&pending);
    void forgetDeadline(const Pending &pending);
    std::optional<TimePoint> earliestDeadline() const;
    // Removes `count` requests from queue `q`: its front, or with priorities
    // present, the highest effective priority (priority + waited/aging), ties
    // by admission. They join `out` in admission order. Requires count <=
    // size. Costs O(count × levels), whatever the queue's length.
    void take(int q, std::size_t count, TimePoint now, std::vector<Pending> &out);

    ModelLimits m_limits;
    std::uint64_t m_configVersion = 1;
    std::vector<Queue> m_queues;
    std::size_t m_size = 0;
    std::uint64_t m_nextSeq = 1;
    RateEstimator m_rate;
    Duration m_effectiveDelay{};
    TimePoint m_lastNow{};
    // The deadlines of the queued requests that have one, kept exact as
    // requests leave by dispatch, expiry or takeAll(): the earliest is the
    // next time expire() has work. (A stale entry here once made poll()
    // return a past wake-up time forever, and the leader spun on it.)
    std::multiset<TimePoint> m_deadlines;
};

} // namespace bp
