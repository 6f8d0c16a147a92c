// One open-loop load run against a fresh engine: the measurement core of
// `batchpilot-bench load`. Qt-free.
//
// Timeline: [0, warmup) warm-up arrivals (run, not measured), then
// [warmup, warmup + duration) the measurement window, then up to `drain` for
// the window's requests to finish; whatever is still queued then is failed
// (ShutdownMode::Fail) and counted as unfinished.
// Every figure but the batch facts is taken over ONE set of requests: those
// whose scheduled arrival falls in the window (summarizeWindow below).
//  - latency: from each such request's scheduled arrival (LoadGenerator
//    stamps it) to its completion, so a backlog shows up as latency (no
//    coordinated omission);
//  - throughput: those of them that completed OK (in the window or during
//    the drain), divided by the window's length. Completions of warm-up
//    arrivals that happen inside the window are not counted: they would
//    credit the window with the warm-up's backlog. Under overload the
//    window's arrivals that the drain does not finish are "unfinished" and
//    the run is marked not clean;
//  - batch facts (padding efficiency, mean batch size): batches dispatched
//    in the window.
#pragma once

#include "engine/core/histogram.h"
#include "engine/exec/engine.h"
#include "engine/workload/workload.h"

#include <nlohmann/json.hpp>

namespace bp::bench {

// Service-level objectives for goodput (`--slo ttft=500ms,tpot=50ms,e2e=2s`):
// a request meets them when it completed OK and each GIVEN bound holds for it
// (vLLM's benchmark_serving and DistServe count goodput this way). Unset
// bounds (zero) are not checked.
//  - ttft: scheduled arrival -> first token;
//  - tpot: (last token - first token) / (tokens - 1); a request with fewer
//    than two tokens has no TPOT and meets any tpot bound (vLLM's rule);
//  - e2e: scheduled arrival -> completion.
struct Slo {
    Duration ttft{}, tpot{}, e2e{};
    bool any() const { return ttft > Duration::zero() || tpot > Duration::zero() || e2e > Duration::zero(); }
    bool tokenLevel() const { return ttft > Duration::zero() || tpot > Duration::zero(); }
};
// "ttft=500ms,tpot=50ms,e2e=2s": any subset of the three, each once, a
// positive number with a unit (us, ms, s). InvalidArgument naming the bad
// item otherwise.
Result<Slo> parseSlo(std::string_view spec);
// "ttft <= 500ms, tpot <= 50ms" (empty when no bound is set).
std::string describe(const Slo &slo);

struct LoadRunOptions {
    BatchingConfig config;
    WorkloadSpec
        workload; // limit: the caller sets one past warmup + duration; arrivals stop at the window end
    double warmupS = 2;
    double durationS = 10;
    double drainS = 5;
    Slo slo; // goodput counts the window's requests that meet it
};

// One request of a run as its completion saw it. Offsets count from the
// start of the run's schedule.
struct LoadSample {
    Duration arrival{}; // scheduled arrival offset
    Duration latency{}; // scheduled arrival -> completion
    StatusCode status = StatusCode::Ok;
    std::uint64_t inputTokens = 0;
    std::uint64_t outputTokens = 0;
    Duration ttft{};                // generative: scheduled arrival -> first token (0 = none)
    Duration tpot{};                // generative, 2+ tokens (0 = none)
    std::uint64_t cachedTokens = 0; // of inputTokens, served from the KV prefix cache
};

// What the requests that arrived in [windowStart, windowEnd) add up to; a
// pure function of the samples, so the counting rule is tested on its own.
struct WindowFigures {
    std::uint64_t arrived = 0;    // samples in the window (every one has finished somehow)
    std::uint64_t completed = 0;  // of those, finished OK
    std::uint64_t failed = 0;     // of those, finished with an error (unfinished included)
    std::uint64_t unfinished = 0; // of those, failed by the shutdown after the drain
    double requestsPerS = 0;      // completed / window length
    double inputTokensPerS = 0;   // of the completed ones
    double outputTokensPerS = 0;
    LatencyHistogram latency, ttft, tpot; // ns, over the completed ones (tpot: those with 2+ tokens)
    double meanTpotMs = 0;
    std::uint64_t good = 0;   // completed ones that met every bound of the SLO
    double goodputPerS = 0;   // good / window length (= requestsPerS without an SLO)
    double prefixHitRate = 0; // of the completed ones' prompt tokens, those served from the prefix cache
    double attainment() const { return arrived ? double(good) / double(arrived) : 0; }
};
bool meetsSlo(const LoadSample &sample, const Slo &slo);
WindowFigures summarizeWindow(const std::vector<LoadSample> &samples, Duration windowStart,
                              Duration windowEnd, const Slo &slo = {});

struct LoadRunResult {
    BatchingConfig config;
    double offeredRate = 0; // requests/s the schedule offered in the window
    double windowS = 0;
    std::uint64_t arrived = 0;    // accepted arrivals in the window
    std::uint64_t completed = 0;  // of those, finished OK
    std::uint64_t failed = 0;     // of those, finished with an error (unfinished included)
    std::uint64_t unfinished = 0; // of those, still queued after the drain
    std::uint64_t rejected = 0;   // refused at submit (queue full), whole run
    double requestsPerS = 0;      // completed (arrived in the window) / window
    double inputTokensPerS = 0;
    double outputTokensPerS = 0;
    LatencyHistogram latency; // ns, scheduled arrival -> completion
    LatencyHistogram ttft;    // ns, generative only, from the scheduled arrival
    LatencyHistogram tpot;    // ns, generative, requests with 2+ tokens
    double meanTpotMs = 0;    // generative, requests with 2+ tokens
    Slo slo;
    std::uint64_t good = 0;   // window arrivals that completed OK within the SLO
    double goodputPerS = 0;   // good / window
    double attainment = 0;    // good / arrived
    double prefixHitRate = 0; // prompt tokens served from the KV prefix cache / prompt tokens
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
