// The measurements of `batchpilot-bench scheduler` (scheduler_bench.h):
// the engine's own overhead with builtin:echo, no compute. Qt-free.
//  - paced: open-loop arrivals at `rate` from `producers` threads; per
//    request overhead = (completion callback time - submit time) - the wait
//    the policy intended (Timing::intendedWait), as percentiles;
//  - saturate: producers submit as fast as the queue admits; the completed
//    rate is the highest sustained request rate;
//  - queued: the work done under the engine mutex as the queue grows.
//    `queued` requests stay queued (priorities 0-3, so the priority order is
//    in play) while one thread, with manual scheduling, refills and
//    dispatches one full batch at a time; each runSchedulerOnce() (poll,
//    take by priority, the echo batch, its completions) is timed, and so is
//    snapshot() with a full config history (1,000 entries).
#pragma once

#include "bench_util.h"

#include "engine/core/histogram.h"
#include "engine/exec/engine.h"

#include <cstdint>
#include <optional>

namespace bp::bench {

struct SchedulerBenchOptions {
    EngineOptions engine; // builtin:echo and the policy's knobs
    bool saturate = false;
    double rate = 50000; // paced: requests/s over all producers
    int producers = 1;
    double duration = 5;               // measured seconds
    double warmup = 1;                 // seconds before the measurement
    int length = 16;                   // tokens per request
    std::optional<std::size_t> queued; // set: the queued mode
};

// Paced or saturated serving, counted over the measured seconds.
struct PacedFigures {
    std::uint64_t submitted = 0, completed = 0, rejected = 0;
    double seconds = 0;
    double meanBatch = 0;               // the engine's, over the whole run
    LatencyHistogram overhead;          // ns per request
    LatencyHistogram lateness, handoff; // ns per batch: intended -> dispatched -> started
    double achievedRate() const { return seconds > 0 ? double(completed) / seconds : 0; }
};
StageResult<PacedFigures> runPaced(const SchedulerBenchOptions &options);

// The queued mode, counted over the measured seconds.
struct QueuedFigures {
    BatchingConfig config; // as run: the queue sized to hold `queued` and a batch
    std::uint64_t dispatches = 0;
    std::size_t configHistory = 0;
    LatencyHistogram dispatch; // ns per runSchedulerOnce()
    LatencyHistogram snapshot; // ns per snapshot(), every 16th dispatch
};
StageResult<QueuedFigures> runQueued(const SchedulerBenchOptions &options);

} // namespace bp::bench
