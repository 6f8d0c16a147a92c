// The live charts' memory: a ring buffer of compact samples (one per
// snapshot, a few minutes' worth), the config-change markers, and the batch
// sizes of the last few seconds. Snapshots themselves are large (three
// latency histograms), so only the figures the charts draw are kept.
// GUI thread only.
#pragma once

#include "app/engine_bridge.h"

#include <QString>

#include <cmath>
#include <deque>
#include <limits>
#include <vector>

namespace bp::ui {

struct ChartSample {
    static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
    double t = 0; // engine uptime, seconds
    double totalP50Ms = 0, totalP90Ms = 0, totalP99Ms = 0;
    double queueP50Ms = 0, queueP90Ms = 0, queueP99Ms = 0;
    double requestsPerS = 0, inputTokensPerS = 0, outputTokensPerS = 0;
    double busyPercent = 0;      // the model instances, mean
    double cpuPercent = kNone;   // process, of all cores
    double gpuPercent = kNone;   // NVML
    double memBwPercent = kNone; // NVML
    double memUsedGiB = kNone;   // NVML
    double queueDepth = 0;
    double paddingPercent = 100;
    double meanBatchSize = 0;
    // Generation (kNone while the window holds no generated request).
    double ttftP50Ms = kNone, ttftP99Ms = kNone;
    double tpotP50Ms = kNone, tpotP99Ms = kNone;
    double goodputPerS = 0; // completed OK within every set goodput SLO
    // Iteration-level (policy continuous; zero for request-level policies).
    double runningSequences = 0, waitingSequences = 0;
    double kvPercent = kNone; // of the KV budget; kNone when it is unlimited
    double kvTokens = 0;
    double tokensPerStep = 0;
    // Prefix caching (kNone while prefix_cache.enabled is off): the window's
    // hit rate in % of the tokens looked up, and the tokens in cached blocks.
    double prefixHitPercent = kNone, prefixCacheTokens = kNone;
};

// The goodput SLOs in force (milliseconds; 0 = not set), from the config.
struct GoodputSlos {
    double ttftMs = 0, tpotMs = 0, e2eMs = 0;
    bool any() const { return ttftMs > 0 || tpotMs > 0 || e2eMs > 0; }
    bool operator==(const GoodputSlos &) const = default;
    static GoodputSlos of(const BatchingConfig &config);
};

struct ConfigMarker {
    double t = 0; // engine uptime, seconds
    std::uint64_t version = 0;
    QString summary; // "max_batch_size 16→32"
    QString origin;  // "gui", "rest", ...
};

class ChartHistory {
public:
    explicit ChartHistory(std::size_t capacity = 3000);

    // Turns a snapshot (and the latest host sample, if any) into a sample,
    // picks up new config changes as markers and the batch-size counts.
    void add(const Snapshot &snapshot, const app::HostSample *host);
    void append(const ChartSample &sample); // the ring buffer alone
    void clear();

    std::size_t size() const { return m_count; }
    std::size_t capacity() const { return m_ring.size(); }
    bool empty() const { return m_count == 0; }
    // i = 0 is the oldest kept sample.
    const ChartSample &at(std::size_t i) const { return m_ring[(m_head + i) % m_ring.size()]; }
    const ChartSample &latest() const { return at(m_count - 1); }
    // Index of the first sample with t >= `t` (size() when none).
    std::size_t firstAtOrAfter(double t) const;

    // Config changes after the initial config, oldest first; those older
    // than the oldest sample are dropped.
    const std::deque<ConfigMarker> &markers() const { return m_markers; }
    std::uint64_t lastMarkerVersion() const { return m_lastVersion; }
    // The goodput SLOs of the newest snapshot.
    const GoodputSlos &slos() const { return m_slos; }
    // True once a snapshot showed a generated request (TTFT measured) or
    // policy continuous: the generation charts have something to show.
    bool generated() const { return m_generated; }

    // Share of batches (percent) per batch size over the last `windowS`
    // seconds; index = batch size. Empty when no batch ran in that time.
    std::vector<double> batchSizeShare(double windowS) const;

private:
    void addMarkers(const Snapshot &snapshot);
    void addBatchCounts(const Snapshot &snapshot);

    std::vector<ChartSample> m_ring;
    std::size_t m_head = 0, m_count = 0;
    std::deque<ConfigMarker> m_markers;
    GoodputSlos m_slos;
    bool m_generated = false;
    std::uint64_t m_lastVersion = 1; // version 1 is the initial config: no marker
    struct Counts {
        double t;
        std::vector<std::uint64_t> counts; // cumulative, Snapshot::batchSizeCounts
    };
    std::deque<Counts> m_counts;
};

} // namespace bp::ui
