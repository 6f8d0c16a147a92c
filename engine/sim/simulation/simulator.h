// The simulator: the engine's executor step (engine/exec/engine_core.h) on a
// virtual clock, over a cost-model backend (cost_backend.h) whose run
// charges the calibration's predicted time instead of computing. Nothing is
// computed; an hour of trace takes about a second. What it keeps of its own
// is only what a simulation needs and the engine has not:
//  - the event queue: arrivals, the end of each running unit, the time an
//    executor is free again, the scheduler's next wake-up, samples (and,
//    when asked, a run of decode steps as one event: coalesceDecodeRuns);
//  - `instances` virtual executors: a unit is formed only when one is free
//    (the engine's leader is an idle executor), so under load requests keep
//    accumulating into larger batches; with every executor busy nothing is
//    decided, so deadlines expire at the next decision, as in the engine;
//  - the noise draws: each unit's cost times a residual of the fit
//    (SimulatorOptions::costNoise), the contention slowdown of units that
//    run at once (CostModel::slowdownAt), and the scheduler lateness an idle
//    executor pays when it wakes (CostModel::dispatchLateness);
//  - the serving overhead: an executor is busy for the calibration's
//    per-batch (per-step) overhead after its unit's model call.
// Everything else — admission and validation, the bounded queue, every
// policy and the adaptive delay, the continuous scheduler with its KV budget
// and preemption, the response cache, the SLO controller and its config
// history, the outcome of every unit (TTFT, TPOT, inter-token gaps), metrics
// and the snapshot with its KV gauges — is the engine's own code, so a
// change to the engine is a change to the simulator.
//
// Drain at the end: when every arrival is in, the engine shuts down (Drain):
// partial batches leave; static without flush-on-drain fails them. Cancel:
// shutdown (Fail): queued requests fail, units in flight finish.
//
// What it does not model: CPU contention beyond what the calibration
// measured (a unit is not re-timed when another starts or ends while it
// runs), out-of-memory splits (the cost backend never runs out), client
// cancellation, and content: a trace has lengths, not tokens, so the
// response cache never hits (each request's tokens are distinct) — except
// for the prefix blocks a trace names (PlannedArrival::blocks) and the context
// a conversation's turns share, which are the same ids the replayer sends.
//
// Records: every unit and request produces the same BatchRecord /
// RequestRecord the engine would, sent to `observer` (a TraceSink), and a
// metric sample (the engine's snapshot) every virtual second.
// Not thread-safe; run() blocks the calling thread.
#pragma once

#include "engine/sim/calibration/cost_model.h"
#include "engine/sim/simulation/cost_backend.h"
#include "engine/sim/simulation/fleet_scaling.h"
#include "engine/sim/simulation/router.h"

#include "engine/core/records.h"
#include "engine/metrics/snapshot.h"
#include "engine/sched/scheduler.h"
#include "engine/workload/arrival_plan.h"

#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace bp {

// One replica's share of a fleet simulation (SimulatorOptions::replicas).
struct ReplicaFigures {
    int replica = 0;
    std::size_t routed = 0;    // requests the router sent to it
    std::size_t completed = 0; // ok
    std::size_t failed = 0;    // refused, expired or shut down
    std::size_t batches = 0;   // units (batches or steps)
    double busyS = 0;          // Σ of its units' model time (virtual seconds)
    int peakOutstanding = 0;   // routed and not yet ended, at most
    std::int64_t peakKvTokens = 0;
    std::uint64_t preemptions = 0;
    std::uint64_t outputTokens = 0;
};

struct SimOutcome {
    // Not ok: the engine core refused the config (EngineCore::create: the
    // knobs, the scheduler); nothing was simulated.
    Status status;
    std::size_t submitted = 0;
    std::size_t clamped = 0; // follow-up turns whose grown prompt was cut to the model's length
    std::size_t accepted = 0;
    std::size_t rejected = 0;  // refused at admission
    std::size_t completed = 0; // ok
    std::size_t failed = 0;    // accepted, then not ok (expired, shut down, out of range)
    std::size_t batches = 0;
    std::size_t coalescedSteps = 0; // of batches: steps taken in decode runs (coalesceDecodeRuns)
    std::size_t configChanges = 0;  // by the SLO controller (the config history's changes)
    std::uint64_t preemptions = 0;  // continuous: sequences preempted by the KV budget
    TimePoint end{};                // the last completion (virtual)
    bool cancelled = false;
    Snapshot last; // the final snapshot (with replicas: fleetSnapshot() of theirs)
    // Per replica (one entry for a single engine), and the router's queue:
    // requests that waited there for a replica below routerQueueLimit.
    std::vector<ReplicaFigures> replicas;
    std::size_t routerQueued = 0;
    Duration routerWaitTotal{}, routerWaitMax{};
    Router::Counters router;
    // Replica time billed: Σ over replicas of the time from when they were
    // asked for (the start, for the first ones) until they were gone or
    // the run ended — cold starts and drains included (fleet_scaling.h).
    double replicaSeconds = 0;
    int peakReplicas = 0; // replicas billed at once, at most
};

struct SimulatorOptions {
    BatchingConfig config; // validated again by EngineCore::create (SimOutcome::status)
    ModelLimits limits;
    CostModel cost;
    OutputKind output = OutputKind::None;
    int positions = 0; // Generated: input + new tokens must fit (0 = no limit)
    CostNoise costNoise = CostNoise::None;
    std::uint64_t noiseSeed = 1;
    // Prompt ids (promptTokens(), as a replay draws them; their values do
    // not matter to batching, only which prompts share ids).
    std::uint64_t promptSeed = 1;
    TimePoint start{std::chrono::seconds(1000)};
    // Receives the records (the session's TraceSink). Not owned; may be null.
    EngineObserver *observer = nullptr;
    // Every samplePeriod of virtual time, and once at the end: the engine
    // snapshot the MetricSampler would have taken. Zero period: at the end only.
    std::function<void(const Snapshot &)> onSample;
    Duration samplePeriod = std::chrono::seconds(1);
    // Called every progressEvery arrivals with the counts so far.
    std::function<void(const SimOutcome &soFar)> onProgress;
    std::size_t progressEvery = 4096;
    const std::atomic<bool> *cancel = nullptr; // checked between arrivals
    // A fleet: `replicas` engines, each with this config, its own
    // scheduler, KV budget and executors and the same cost model, on one
    // virtual clock and one event queue, behind a router (router.h). Each
    // arrival is routed when it arrives, unless routerQueueLimit > 0: then a
    // replica takes at most that many outstanding requests and the rest wait
    // in the router's FIFO queue (their queue wait includes it) — with
    // limit 1 and policy none, the fleet is an M/D/c queue. Records carry
    // the replica (BatchRecord/RequestRecord::replica); batch ids are
    // renumbered so they stay unique across replicas (local k of replica r
    // of N: (k − 1)·N + r + 1). Config changes are reported for replica 0.
    int replicas = 1;
    RouterOptions router;
    int routerQueueLimit = 0;
    // Autoscaling (fleet_scaling.h): `replicas` serve from the
    // start, then a decision every scaling->period adds replicas (serving
    // after the cold start) or drains them. Not with an `observer`: a
    // scaled fleet records no session (SimOutcome::status says so).
    std::optional<FleetScaling> scaling;
    // Each request as it ended — completed, failed or refused (then with
    // the refusal's status and no timing): its position in the arrivals,
    // when it arrived (before now if it waited at the router) and the
    // engine's response. Optional; what a caller needs without a session.
    std::function<void(std::size_t index, TimePoint arrival, const Response &)> onResponse;
    // Coalesced decode steps (a week of a fleet is ~10^8 steps): on a
    // replica with one executor, the steps its scheduler would take one
    // after another while no request arrives — every running sequence only
    // decoding, nothing waiting, none finishing, the KV budget holding each
    // step's tokens (EngineCore::beginDecodeRunLocked) — are one event. Each
    // step is still charged by the cost model and every token stamped at
    // its step's end; a request routed to the replica ends the run after
    // the step then running, and a run ends before the next scaling
    // decision, which reads the replicas' KV. The outcome is stepping's to
    // the nanosecond (test_fleet_scaling compares them), except that under
    // drawn noise the draws come in another order; the runs' steps make no
    // batch records or engine metrics (SimOutcome counts them). Only
    // without an observer and samples (ignored otherwise).
    bool coalesceDecodeRuns = false;
};

// The fleet's snapshot for a metric sample: counters, rates and depths
// summed; busy fraction the mean; window latency percentiles the largest
// of the replicas' (conservative), means weighted by their counts. One
// snapshot: itself.
Snapshot fleetSnapshot(std::span<const Snapshot> replicas);

class Simulator {
public:
    explicit Simulator(SimulatorOptions options);
    // `arrivals` in offset order.
    SimOutcome run(std::span<const PlannedArrival> arrivals);

private:
    struct Impl;
    SimulatorOptions m_options;
};

} // namespace bp
