// The scheduler seam: what the engine's executor threads drive.
//
// Models: Triton core's Scheduler (Enqueue; the scheduler owns its queues)
// and tensorflow/serving's BatchScheduler. A Scheduler owns the queued
// requests and decides, at a time the engine's clock gives it, what runs
// next. It has no threads and no lock of its own: the Engine calls it under
// its mutex (or a test or the replayer calls it directly with fake or
// virtual time). Not thread-safe.
//
// The executor loop, the same for every kind of scheduler:
//   admit() on submit; poll() when an executor is free; the Poll holds a
//   unit of work (`work`) the executor runs outside the lock, the requests
//   whose deadline passed, and when poll() next has something to do. After
//   running a unit, the executor hands its outcome back with finished()
//   (under the lock): a request-level scheduler has nothing to learn from it;
//   an iteration-level one (policy `continuous`) advances its sequences.
//
// Implementations: Batcher (request-level: none, static, dynamic, bucketed,
// hybrid, adaptive delay; its unit is a Batch run by Backend::run) and
// ContinuousScheduler (policy `continuous`; its unit is a StepWork run by
// StepModel::step, engine/step_work.h).
#pragma once

#include "batching_config.h"
#include "policy.h"
#include "request.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bp {

class StepModel;
struct StepOutcome;
struct StepWork;
struct StepDone;

// What the model accepts; admit() checks every request against it.
struct ModelLimits {
    int maxSequenceLength = 1024;
    int vocabSize = 256;
};

// A queued request and the completion it is owed.
struct Pending {
    Request request;
    Completion done;
    std::uint64_t seq = 0; // admission order, set by admit()
};

// A request-level unit of work: whole requests, run together by
// Backend::run and completed together.
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

// Iteration-level state (policy `continuous`) for the snapshot's gauges.
struct IterationGauges {
    std::size_t running = 0, waiting = 0; // sequences
    std::int64_t kvTokens = 0;            // tokens held in KV caches
    std::int64_t kvCapacityTokens = 0;    // the KV budget; 0 = unlimited
    std::uint64_t preemptions = 0;        // since this scheduler was built
};

class Scheduler {
public:
    virtual ~Scheduler() = default;

    // Validates `pending.request` (against the model's limits and the
    // config) and queues it. On failure `pending` is left untouched, so the
    // caller still owns the completion, and the Status says why.
    virtual Status admit(Pending &pending, TimePoint now) = 0;
    // Validation alone, without queueing.
    virtual Status check(const Request &request, TimePoint now) const = 0;
    // True when the last successful admit() made a decision possible earlier
    // than the scheduler's current plan: the engine then wakes its leader.
    virtual bool lastAdmitNeedsWake() const = 0;

    struct Failure {
        Pending pending;
        Status status;
    };
    struct Poll {
        // The unit of work for a free executor: a batch (request-level) or
        // a step (iteration-level); at most one is set.
        std::optional<Batch> batch;
        std::shared_ptr<StepWork> step;
        std::vector<Pending> expired;    // deadline passed while queued: fail them
        std::vector<Failure> failed;     // to complete with their status (e.g. Cancelled)
        std::optional<TimePoint> wakeAt; // next time poll() has something to do
        // Work in flight decides what comes next (finished() returns true):
        // the engine must not treat "nothing to do" as stuck while draining.
        bool busy = false;
    };
    // One scheduling decision at `now`: expires overdue requests, then (when
    // mayDispatch, i.e. an executor is free) picks the next unit of work.
    // `draining`: the engine is shutting down and no more requests come.
    virtual Poll poll(TimePoint now, bool draining, bool mayDispatch = true) = 0;
    // The executor ran `batch` (its members are completed by the engine).
    // Called under the engine lock after every batch.
    virtual void finished(const Batch &batch, TimePoint now) = 0;
    // The executor ran `step` (StepModel::step returned `status`, and
    // `outcomes` per item). Under the engine lock. The scheduler advances its
    // sequences, calls their onToken, and moves the requests that ended into
    // `done` for the executor to complete. True when a new decision is
    // possible (the engine then wakes its leader).
    virtual bool finished(StepWork & /*step*/, const Status & /*status*/,
                          std::vector<StepOutcome> & /*outcomes*/, TimePoint /*now*/, StepDone & /*done*/)
    {
        return false;
    }

    // A validated config change; `version` stamps later units of work.
    // Nothing queued is lost.
    virtual void reconfigure(const BatchingConfig &config, std::uint64_t version) = 0;
    // Removes every queued request (shutdown, or a switch to another kind
    // of scheduler), in admission order.
    virtual std::vector<Pending> takeAll() = 0;
    // True while a unit it handed out has not come back through finished()
    // and the scheduler still tracks its requests (a step's sequences).
    virtual bool hasWorkInFlight() const { return false; }

    virtual const BatchingConfig &config() const = 0;
    // Requests queued (not yet in a unit of work).
    virtual std::size_t size() const = 0;
    // Queued requests per queue, in the config's queue order.
    virtual std::vector<std::size_t> depths() const = 0;
    // Smoothed arrival rate (requests/s) as of `now`.
    virtual double arrivalRate(TimePoint now) const = 0;
    // The queue delay in force (the adaptive one when enabled).
    virtual Duration effectiveDelay() const = 0;
    // Running / waiting sequences and the KV cache, for an iteration-level
    // scheduler; nullopt for a request-level one (the Batcher has none).
    virtual std::optional<IterationGauges> iterationGauges() const { return std::nullopt; }

    // Ids of units of work (Batch::id, StepWork::id) are unique in a session
    // (issue 23 item 5): a scheduler built to replace another (a switch of
    // policy kind) continues its numbering, so the batches table and the
    // requests that name a batch_id never see one id twice.
    void continueUnitIdsFrom(const Scheduler &previous)
    {
        m_nextUnitId = std::max(m_nextUnitId, previous.m_nextUnitId);
    }

protected:
    // The next unit's id: 1, 2, ... (0 means "never ran" in the records).
    std::uint64_t takeUnitId() { return m_nextUnitId++; }

private:
    std::uint64_t m_nextUnitId = 1;
};

// Whether `config.policy` can run on a model with (`steps` non-null) or
// without step-level generation: OK, or InvalidArgument saying why.
Status schedulerSupports(const BatchingConfig &config, const StepModel *steps, const std::string &modelName);
// Both configs are served by the same kind of scheduler (reconfigure()
// suffices; else the engine builds a new one and moves the queue over).
bool sameSchedulerKind(const BatchingConfig &a, const BatchingConfig &b);
// The scheduler for `config.policy`. `steps` is the model's StepModel
// (Backend::steps()); required for `continuous` (see schedulerSupports()).
std::unique_ptr<Scheduler> makeScheduler(const BatchingConfig &config, ModelLimits limits, StepModel *steps);

} // namespace bp
