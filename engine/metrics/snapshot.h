// An immutable picture of the engine, taken by Engine::snapshot(). Charts,
// /metrics, /v1/stats and reports read only this. "window" figures cover the
// last MetricsRecorder::kWindow (2 s) so charts react within a second;
// "cumulative" figures cover the engine's life.
#pragma once

#include "engine/config/config_history.h"
#include "engine/core/histogram.h"
#include "engine/core/records.h"

#include <array>
#include <cstdint>
#include <vector>

namespace bp {

struct LatencySummary {
    std::uint64_t count = 0;
    double meanUs = 0, p50Us = 0, p90Us = 0, p99Us = 0, p999Us = 0, maxUs = 0;
};

constexpr int kStatusCodeCount = int(StatusCode::Internal) + 1;

// One queue (length bucket, or hybrid layer) since its layout last changed.
struct QueueSummary {
    std::string name; // "≤64", "65–128", "static-16", "dynamic", "all"
    std::size_t depth = 0;
    std::uint64_t requests = 0, batches = 0;
    double meanBatchSize = 0;
    double paddingEfficiency = 1;
    double p50Us = 0, p99Us = 0;
};

struct CacheFigures {
    bool enabled = false;
    std::uint64_t hits = 0, misses = 0, entries = 0, evictions = 0;
    std::int64_t bytes = 0;
    double hitRate() const { return hits + misses ? double(hits) / double(hits + misses) : 0.0; }
};

struct Snapshot {
    TimePoint takenAt{};
    double uptimeS = 0;
    std::uint64_t configVersion = 0;
    BatchingConfig config;
    std::string modelName;
    std::string device;

    // counters (cumulative)
    std::uint64_t submitted = 0;                            // accepted into the queue
    std::uint64_t completed = 0;                            // finished with status ok
    std::array<std::uint64_t, kStatusCodeCount> byStatus{}; // every final status, rejects included
    std::uint64_t batches = 0;
    std::uint64_t inputTokens = 0;
    std::uint64_t outputTokens = 0;

    // queue
    std::size_t queueDepth = 0;
    std::vector<std::size_t> queueDepths; // per bucket
    int inFlightBatches = 0;
    std::vector<QueueSummary> queues; // per bucket / layer
    double arrivalRate = 0;           // smoothed, requests/s
    Duration effectiveDelay{};        // the adaptive delay when on, else max_queue_delay
    CacheFigures cache;
    std::uint64_t cacheHits = 0; // completed from the cache (also in `completed`)

    // window figures
    double windowS = 0;
    double requestsPerS = 0;
    double inputTokensPerS = 0;
    double outputTokensPerS = 0;
    LatencySummary total, queueWait, compute, timeToFirstToken;
    double meanBatchSize = 0;
    double paddingEfficiency = 1;     // real tokens / padded tokens
    double busyFraction = 0;          // mean over the model instances
    std::vector<double> instanceBusy; // busy fraction per model instance (`instances` knob)

    // cumulative figures
    LatencySummary totalAll, queueWaitAll, computeAll, timeToFirstTokenAll;
    double paddingEfficiencyAll = 1;
    double meanBatchSizeAll = 0;
    std::vector<std::uint64_t> batchSizeCounts; // index = batch size, [0] unused
    // cumulative histograms, for Prometheus buckets and reports
    LatencyHistogram totalHist, queueWaitHist, computeHist;

    // Generation (requests that produced tokens), window. TTFT is above
    // (timeToFirstToken). TPOT = (last - first) / (n - 1) per request with
    // 2+ tokens; ITL = every gap between consecutive tokens (see
    // RequestRecord::interTokenLatencies for request-level policies).
    LatencySummary timePerOutputToken, interTokenLatency;
    // Completed OK within every set goodput SLO (config.goodput), per s over
    // the window. Equals requestsPerS when no SLO is set.
    double goodputPerS = 0;
    // Generation, cumulative.
    LatencySummary timePerOutputTokenAll, interTokenLatencyAll;
    LatencyHistogram ttftHist, tpotHist, itlHist; // for /metrics buckets and reports
    std::uint64_t goodCompleted = 0;              // completed OK within every set goodput SLO

    // Iteration-level gauges (policy `continuous`; all zero under the
    // request-level policies), as of takenAt.
    std::size_t runningSequences = 0, waitingSequences = 0;
    std::int64_t kvTokens = 0, kvCapacityTokens = 0; // capacity 0 = unlimited
    double kvUsageRatio = 0;                         // kvTokens / capacity; 0 when unlimited
    double tokensPerStep = 0;                        // window mean over steps (prefill + decode tokens)
    // Cumulative over the engine's life (policy switches included).
    std::uint64_t steps = 0, stepTokens = 0, preemptions = 0;
    // KV prefix cache (prefix_cache.enabled): context tokens looked up when
    // sequences joined, and the cached ones among them (they skipped
    // prefill), cumulative; hits / queries cumulative and over the window
    // (0 without queries); tokens of kvTokens held in cached blocks now.
    std::uint64_t prefixCacheQueriesTokens = 0, prefixCacheHitsTokens = 0;
    double prefixCacheHitRateAll = 0, prefixCacheHitRate = 0;
    std::int64_t prefixCacheTokens = 0;

    std::vector<BatchRecord> recentBatches; // newest last, at most 256
    ConfigHistory configHistory;            // oldest first, at most 1000 (shared, cheap to copy)
};

} // namespace bp
