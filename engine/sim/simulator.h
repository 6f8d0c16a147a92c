// The simulator: a discrete-event simulation of the engine on a virtual
// clock (issue 15 item 2). It drives the real Batcher — the same admission,
// expiry, routing, adaptive delay and policy code the engine runs — and
// charges each batch the cost model's prediction instead of running a
// model. Nothing is computed; an hour of trace takes about a second.
//
// What it models, as the engine does it (engine/engine.h):
//  - `instances` executors. A batch is formed only when one is free (the
//    engine's leader is an idle executor), so under load requests keep
//    accumulating into larger batches; the policy is asked again as soon as
//    an executor frees up. With every executor busy nothing is polled, so
//    deadlines expire at the next poll, as in the engine.
//  - The bounded queue (queue_capacity -> QueueFull at admission), request
//    validation, deadlines, priorities, every request-level policy (none,
//    static, dynamic, bucketed, hybrid), the adaptive delay and the memory
//    batch limit (all inside the Batcher), and the SLO controller (AIMD on
//    max_queue_delay: the engine's SloController, fed the simulated
//    latencies; its changes are stamped into the config history).
//  - A generative model: a member whose input + new tokens exceed the
//    model's positions fails with OutOfRange, as in the decoder; the others
//    run; time to first token = start + the prefill's predicted cost.
//  - Drain at the end: partial batches leave (static without flush-on-drain
//    fails them with ShuttingDown), as Engine::shutdown(Drain) does.
//
// Contention between executors: a unit that starts while k − 1 others run
// is charged CostModel::slowdownAt(k) times its cost (measured by the
// profile: the same batch alone and on k threads at once).
//
// What it does not model: the response cache (every request runs), the
// out-of-memory split (the memory guard), CPU contention beyond what the
// calibration measured (other processes; a unit is not re-timed when
// another starts or ends while it runs), the serving path's
// cost other than the calibration's per-batch overhead, and (continuous)
// client cancellation and live changes of the kind of scheduler.
//
// Policy `continuous` (iteration-level): the REAL ContinuousScheduler runs
// behind the same seam, over a StepModel that computes nothing: it keeps
// each sequence's cached length (as the real one keeps its KV cache) so
// that every step is priced by CostModel::iterationSeconds — its decodes
// with their context, its prompt chunks with what they attend to. As in the
// engine, one step is in flight at a time; its outcome is handed back to
// the scheduler when the model returns (finished sequences leave, waiting
// ones join at the next step, the KV budget preempts by recompute), and the
// executor is free after the serving overhead (with two or more instances
// an idle one leads the next step meanwhile). TTFT and TPOT per request
// come out of the scheduler as in the engine.
//
// Cost noise (SimulatorOptions::costNoise): the prediction is the fit's
// typical cost. Under contention real costs spread, and a queue near
// saturation feels the spread; `Drawn` charges each unit its prediction
// times a ratio drawn (seeded) from the calibration's residuals, `Mean`
// times their mean.
//
// Records: every batch and request produces the same BatchRecord /
// RequestRecord the engine would, sent to `observer` (a TraceSink), and a
// metric sample (the engine's MetricsRecorder figures) every virtual second.
// Not thread-safe; run() blocks the calling thread.
#pragma once

#include "cost_model.h"

#include "engine/batcher.h"
#include "engine/records.h"
#include "engine/scheduler.h"
#include "engine/snapshot.h"

#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace bp {

struct SimArrival {
    Duration offset{}; // from the simulation's start
    int inputTokens = 1;
    int maxNewTokens = 0;
    std::uint64_t id = 0; // 0 = position + 1
    int priority = 0;
    std::optional<Duration> timeout; // deadline = arrival + timeout
};

// How a request's output is counted, as the model would produce it.
enum class OutputKind {
    None,      // an encoder: values, no tokens
    Echo,      // builtin:echo: max_new_tokens generated tokens, or the input when 0
    Generated, // a decoder: max(1, max_new_tokens) tokens
};

struct SimOutcome {
    std::size_t submitted = 0;
    std::size_t accepted = 0;
    std::size_t rejected = 0;  // refused at admission
    std::size_t completed = 0; // ok
    std::size_t failed = 0;    // accepted, then not ok (expired, shut down, out of range)
    std::size_t batches = 0;
    std::size_t configChanges = 0; // by the SLO controller
    std::uint64_t preemptions = 0; // continuous: sequences preempted by the KV budget
    TimePoint end{};               // the last completion (virtual)
    bool cancelled = false;
    Snapshot last; // the final snapshot
};

// How a unit's cost is charged: its prediction (None), times the mean
// residual of the calibration's fit (Mean), or times a residual drawn at
// random, seeded (Drawn).
enum class CostNoise { None, Mean, Drawn };
// "none", "mean", "drawn"; nullopt for anything else.
std::optional<CostNoise> parseCostNoise(std::string_view name);
std::string_view costNoiseName(CostNoise noise);

struct SimulatorOptions {
    BatchingConfig config; // validated by the caller
    ModelLimits limits;
    CostModel cost;
    OutputKind output = OutputKind::None;
    int positions = 0; // Generated: input + new tokens must fit (0 = no limit)
    CostNoise costNoise = CostNoise::None;
    std::uint64_t noiseSeed = 1;
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
};

class Simulator {
public:
    explicit Simulator(SimulatorOptions options);
    // `arrivals` in offset order.
    SimOutcome run(std::span<const SimArrival> arrivals);

private:
    struct Impl;
    SimulatorOptions m_options;
};

} // namespace bp
