// The scheduler seam: what the engine's executor threads drive.
//
// Models: Triton core's Scheduler (Enqueue; the scheduler owns its queues)
// and tensorflow/serving's BatchScheduler. A Scheduler owns the queued
// requests and decides, at a time the engine's clock gives it, what runs
// next. It has no threads and no lock of its own: the Engine calls it under
// its mutex (or a test or the replayer calls it directly with fake or
// virtual time). Not thread-safe.
//
// The executor step, the same for every kind of scheduler (and for the
// engine's threads and the simulator alike, engine/executor_step.h):
//   admit() on submit; poll() when an executor is free; the Poll holds a
//   unit of work (engine/sched/work_unit.h) the executor runs outside the lock,
//   the requests whose deadline passed, and when poll() next has something
//   to do. After running the unit, the executor hands its outcome back with
//   finished() (under the lock), which returns the requests that ended with
//   their answers: a request-level scheduler's whole batch, an
//   iteration-level one's (policy `continuous`) finished sequences.
//
// Implementations: Batcher (request-level: none, static, dynamic, bucketed,
// hybrid, adaptive delay; its unit is a Batch run by Backend::run) and
// ContinuousScheduler (policy `continuous`; its unit is a StepWork run by
// StepModel::step).
#pragma once

#include "engine/core/batching_config.h"
#include "engine/core/request.h"
#include "policy.h"
#include "work_unit.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace bp {

// Iteration-level state (policy `continuous`) for the snapshot's gauges.
struct IterationGauges {
    std::size_t running = 0, waiting = 0; // sequences
    std::int64_t kvTokens = 0;            // tokens held in KV caches
    std::int64_t kvCapacityTokens = 0;    // the KV budget; 0 = unlimited
    std::uint64_t preemptions = 0;        // since this scheduler was built
    std::int64_t prefixCacheTokens = 0;   // of kvTokens, in prefix-cache blocks
};

// What the snapshot shows of a scheduler's queues.
struct SchedulerGauges {
    std::vector<std::size_t> depths;          // queued requests per queue, in the config's queue order
    double arrivalRate = 0;                   // smoothed, requests/s
    Duration effectiveDelay{};                // the queue delay in force (the adaptive one when enabled)
    std::optional<IterationGauges> iteration; // an iteration-level scheduler's; nullopt otherwise
};

// Unit ids a scheduler hands out: one sequence per engine (and so per
// session), kept across a switch to another kind of scheduler, so that no
// two units of a session share an id.
class UnitIds {
public:
    std::uint64_t next() { return m_next++; }

private:
    std::uint64_t m_next = 1;
};

class Scheduler {
public:
    virtual ~Scheduler() = default;

    // Validates `pending.request` (against the model's limits and the
    // config) and queues it. On failure `pending` is left untouched, so the
    // caller still owns the completion, and the Status says why. On success
    // lastAdmitNeedsWake() says whether a decision is now possible earlier
    // than the scheduler's current plan (the engine then wakes its leader).
    virtual Status admit(Pending &pending, TimePoint now) = 0;

    struct Failure {
        Pending pending;
        Status status;
    };
    struct Poll {
        std::optional<WorkUnit> unit;    // the unit of work for a free executor
        std::vector<Pending> expired;    // deadline passed while queued: fail them
        std::vector<Failure> failed;     // to complete with their status (e.g. Cancelled)
        std::optional<TimePoint> wakeAt; // next time poll() has something to do
        // Work in flight decides what comes next (finished() returns true):
        // the engine must not treat "nothing to do" as stuck while draining.
        bool busy = false;

        Batch *batch() { return unit ? unit->batch() : nullptr; }
        StepWork *step() { return unit ? unit->step() : nullptr; }
    };
    // One scheduling decision at `now`: expires overdue requests, then (when
    // mayDispatch, i.e. an executor is free) picks the next unit of work.
    // `draining`: the engine is shutting down and no more requests come.
    virtual Poll poll(TimePoint now, bool draining, bool mayDispatch = true) = 0;
    // The executor ran `unit` (`run`: its status, results or outcomes, and
    // when). Under the engine lock. The scheduler learns from it (an
    // iteration-level one advances its sequences and calls their onToken)
    // and moves the requests that ended into `done` with their answers, for
    // the executor to record and complete. True when a new decision is
    // possible (the engine then wakes its leader).
    virtual bool finished(WorkUnit &unit, UnitRun &run, TimePoint now, UnitDone &done) = 0;

    // A validated config change; `version` stamps later units of work.
    // Nothing queued is lost.
    virtual void reconfigure(const BatchingConfig &config, std::uint64_t version) = 0;
    // Removes every queued request (shutdown, or a switch to another kind
    // of scheduler), in admission order.
    virtual std::vector<Pending> takeAll() = 0;
    // Requests it holds that have not ended (queued; for an iteration-level
    // scheduler, running sequences too). The engine drains until 0.
    virtual std::size_t size() const = 0;
    virtual SchedulerGauges gauges(TimePoint now) const = 0;

    const BatchingConfig &config() const { return m_config; }
    bool lastAdmitNeedsWake() const { return m_lastAdmitNeedsWake; }
    // True while a unit it handed out has not come back through finished()
    // and the scheduler still tracks its requests (a step's sequences).
    bool hasWorkInFlight() const { return m_workInFlight; }

protected:
    Scheduler(BatchingConfig config, std::shared_ptr<UnitIds> ids)
        : m_config(std::move(config)), m_ids(ids ? std::move(ids) : std::make_shared<UnitIds>())
    {
    }
    BatchingConfig m_config;
    std::shared_ptr<UnitIds> m_ids;
    bool m_lastAdmitNeedsWake = false;
    bool m_workInFlight = false;
};

// Whether `config.policy` can run on a model with (`steps` non-null) or
// without step-level generation: OK, or InvalidArgument saying why.
Status schedulerSupports(const BatchingConfig &config, StepModel *steps, const std::string &modelName);
// Both configs are served by the same kind of scheduler (reconfigure()
// suffices; else the engine builds a new one and moves the queue over).
bool sameSchedulerKind(const BatchingConfig &a, const BatchingConfig &b);
// The scheduler for `config.policy`. `steps` is the model's StepModel
// (Backend::steps()); required for `continuous` (see schedulerSupports()).
// `ids`: the engine's unit ids (null: a fresh sequence from 1).
std::unique_ptr<Scheduler> makeScheduler(const BatchingConfig &config, ModelLimits limits, StepModel *steps,
                                         std::shared_ptr<UnitIds> ids = nullptr);

} // namespace bp
