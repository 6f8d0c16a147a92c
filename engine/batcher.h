// The queues and the policy, without threads: admission (validation and the
// bounded queue), deadline expiry, live reconfiguration and batch formation.
// The Engine drives one Batcher under its lock with the real clock; tests and
// replay drive it directly with fake or virtual time. Not thread-safe.
#pragma once

#include "batching_config.h"
#include "policy.h"
#include "adaptive.h"
#include "rate_estimator.h"
#include "request.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <set>
#include <vector>

namespace bp {

// What the model accepts; submit() checks every request against it.
struct ModelLimits {
    int maxSequenceLength = 1024;
    int vocabSize = 256;
};

struct Pending {
    Request request;
    Completion done;
};

struct Batch {
    std::uint64_t id = 0;
    std::vector<Pending> items;
    int paddedLength = 0;
    int bucket = 0;
    DispatchReason reason = DispatchReason::Single;
    PolicyKind policy = PolicyKind::None;
    TimePoint dispatchedAt{};
    TimePoint intendedAt{};
    std::uint64_t configVersion = 0;
};

class Batcher {
public:
    Batcher(BatchingConfig config, ModelLimits limits);

    // Validates `request` (not empty, not too long, every token in the
    // vocabulary, deadline not passed, room in the queue) and queues it.
    // On failure `pending` is left untouched and the Status says why.
    Status admit(Pending &pending, TimePoint now);
    // Validation alone, without queueing.
    Status check(const Request &request, TimePoint now) const;

    struct Poll {
        std::optional<Batch> batch;
        std::vector<Pending> expired;    // deadline passed while queued
        std::optional<TimePoint> wakeAt; // next time poll() has something to do
    };
    // One scheduling step: expires overdue requests, then (when mayDispatch,
    // i.e. an executor is free) asks the policy for a batch.
    Poll poll(TimePoint now, bool draining, bool mayDispatch = true);

    // Validated by the caller. Re-buckets queued requests when the queues
    // change, keeping each queue in arrival order.
    void reconfigure(const BatchingConfig &config, std::uint64_t version);
    // Removes every queued request (shutdown).
    std::vector<Pending> takeAll();

    const BatchingConfig &config() const { return m_config; }
    std::size_t size() const { return m_size; }
    std::vector<std::size_t> depths() const;
    // Smoothed arrival rate (requests/s) as of `now`.
    double arrivalRate(TimePoint now) const { return m_rate.rate(now); }
    // The queue delay in force: the adaptive one when enabled, else the config's.
    Duration effectiveDelay() const { return m_effectiveDelay; }
    // True when a submit just made a policy decision possible earlier than
    // the scheduler's current plan (first request in a queue, a batch
    // filled, or an earlier deadline): the scheduler needs a wake-up.
    bool lastAdmitNeedsWake() const { return m_lastAdmitNeedsWake; }

private:
    void expire(TimePoint now, std::vector<Pending> &out);
    int route(int length, TimePoint now);
    int fillOf(int queue) const;
    void updateEffectiveDelay(TimePoint now);
    void enqueue(int queue, Pending &&pending);
    void forgetDeadline(const Pending &pending);
    std::optional<TimePoint> earliestDeadline() const;
    // Removes `count` requests from queue `q`: its front, or with priorities
    // present, the highest effective priority (priority + waited/aging), ties
    // by arrival. Requires count <= size.
    void take(int q, std::size_t count, TimePoint now, std::vector<Pending> &out);

    BatchingConfig m_config;
    ModelLimits m_limits;
    std::uint64_t m_configVersion = 1;
    std::vector<std::deque<Pending>> m_queues;
    std::vector<std::size_t> m_prioritized; // per queue: requests with priority != 0
    std::size_t m_size = 0;
    RateEstimator m_rate;
    Duration m_effectiveDelay{};
    TimePoint m_lastNow{};
    // The deadlines of the queued requests that have one, kept exact as
    // requests leave by dispatch, expiry or takeAll(): the earliest is the
    // next time expire() has work. (A stale entry here once made poll()
    // return a past wake-up time forever, and the leader spun on it.)
    std::multiset<TimePoint> m_deadlines;
    std::uint64_t m_nextBatchId = 1;
    bool m_lastAdmitNeedsWake = false;
};

} // namespace bp
