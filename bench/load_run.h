// One open-loop load run against a fresh engine: the measurement core of
// `batchpilot-bench load`. Qt-free.
//
// Timeline: [0, warmup) warm-up arrivals (run, not measured), then
// [warmup, warmup + duration) the measurement window, then up to `drain` for
// the window's requests to finish; whatever is still queued then is failed
// (ShutdownMode::Fail) and counted as unfinished.
//  - latency: every request that ARRIVED in the window, from its scheduled
//    arrival (LoadGenerator stamps it) to its completion, so a backlog shows
//    up as latency (no coordinated omission);
//  - throughput: completions that HAPPENED in the window, divided by its
//    length (under overload that is the service rate, not the offered one);
//  - batch facts (padding efficiency, mean batch size): batches dispatched
//    in the window.
#pragma once

#include "engine/engine.h"
#include "engine/histogram.h"
#include "engine/workload.h"

#include <nlohmann/json.hpp>

namespace bp::bench {

struct LoadRunOptions {
    BatchingConfig config;
    WorkloadSpec workload; // limit is set by the caller to cover warmup + duration
    double warmupS = 2;
    double durationS = 10;
    double drainS = 5;
};

struct LoadRunResult {
    BatchingConfig config;
    double offeredRate = 0;   // requests/s the schedule offered in the window
    double windowS = 0;
    std::uint64_t arrived = 0;    // accepted arrivals in the window
    std::uint64_t completed = 0;  // of those, finished OK
    std::uint64_t failed = 0;     // of those, finished with an error (unfinished included)
    std::uint64_t unfinished = 0; // of those, still queued after the drain
    std::uint64_t rejected = 0;   // refused at submit (queue full), whole run
    double requestsPerS = 0;      // completions in the window / window
    double inputTokensPerS = 0;
    double outputTokensPerS = 0;
    LatencyHistogram latency; // ns, scheduled arrival -> completion
    LatencyHistogram ttft;    // ns, generative only
    double meanTpotMs = 0;    // generative, requests with 2+ tokens
    double paddingEfficiency = 1;
    double meanBatchSize = 0;
    std::uint64_t batches = 0;

    // True when every arrival of the window finished and none was refused:
    // only then are the percentiles the whole story.
    bool clean() const { return unfinished == 0 && rejected == 0 && failed == 0; }
};

Result<LoadRunResult> runLoad(const std::shared_ptr<Backend> &backend, const LoadRunOptions &options);

nlohmann::json toJson(const LoadRunResult &result);

} // namespace bp::bench
