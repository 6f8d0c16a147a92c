// Aggregates request and batch records into cumulative and sliding-window
// figures. Thread-safe: executors record whole batches under one short lock;
// snapshot readers copy under the same lock.
#pragma once

#include "engine/core/thread_annotations.h"

#include "engine/core/histogram.h"
#include "snapshot.h"

#include <array>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace bp {

class MetricsRecorder {
public:
    static constexpr int kSlots = 8;
    static constexpr Duration kSlot = std::chrono::milliseconds(250);
    static constexpr Duration kWindow = kSlot * kSlots; // 2 s
    static constexpr int kMaxExecutors = 16;
    static constexpr std::size_t kRecentBatches = 256;

    explicit MetricsRecorder(TimePoint start);

    // `now` is when the batch's members completed.
    void recordBatch(const BatchRecord &batch, std::span<const RequestRecord> requests, TimePoint now);
    void recordFailure(StatusCode code);
    void recordAccepted();
    // A request answered from the response cache: counts as completed, with
    // its (tiny) latency, but no batch.
    void recordCacheHit(const RequestRecord &request, TimePoint now);
    // The goodput SLO requests are judged against from now on (the engine
    // sets it at start and on every config change).
    void setGoodputSlo(const GoodputConfig &slo);
    // The queue layout changed (policy, bucket edges, hybrid sizes): per-queue
    // figures start over.
    void resetQueues();

    // Fills every figure of `out` the recorder owns (not queue or config).
    void fill(Snapshot &out, TimePoint now) const;
    // Per-queue figures, named by `config`, with the current depths.
    void fillQueues(Snapshot &out, const BatchingConfig &config) const;

private:
    // A slot's counters; its histograms beside them (Slot) are cleared in
    // place when the slot is reused (reset()), not reassigned: 6 × 19 KB.
    struct SlotCounts {
        std::int64_t epoch = -1;
        std::uint64_t requests = 0, inputTokens = 0, outputTokens = 0, batches = 0, batchMembers = 0;
        std::uint64_t good = 0, steps = 0, stepTokens = 0;
        std::uint64_t prefixQueries = 0, prefixHits = 0; // tokens
        std::int64_t realTokens = 0, paddedTokens = 0;
        std::array<std::int64_t, kMaxExecutors> busyNs{};
    };
    struct Slot : SlotCounts {
        LatencyHistogram total, queueWait, compute, ttft, tpot, itl;
        void reset(std::int64_t epoch);
    };
    Slot &slotFor(TimePoint t) REQUIRES(m_mutex);
    std::int64_t epochOf(TimePoint t) const { return (t - m_start) / kSlot; }

    const TimePoint m_start;
    mutable Mutex m_mutex;
    std::unique_ptr<std::array<Slot, kSlots>> m_slots GUARDED_BY(m_mutex);
    // Records one completed-OK request's generation figures and goodput.
    void recordGeneration(const RequestRecord &r, Slot &slot) REQUIRES(m_mutex);

    LatencyHistogram m_total GUARDED_BY(m_mutex),
        m_queueWait GUARDED_BY(m_mutex), m_compute GUARDED_BY(m_mutex);
    LatencyHistogram m_ttft GUARDED_BY(m_mutex), m_tpot GUARDED_BY(m_mutex), m_itl GUARDED_BY(m_mutex);
    GoodputConfig m_goodputSlo GUARDED_BY(m_mutex);
    std::uint64_t m_good GUARDED_BY(m_mutex) = 0;
    std::uint64_t m_steps GUARDED_BY(m_mutex) = 0;
    std::uint64_t m_stepTokens GUARDED_BY(m_mutex) = 0;
    std::uint64_t m_preemptions GUARDED_BY(m_mutex) = 0;
    std::uint64_t m_prefixQueries GUARDED_BY(m_mutex) = 0, m_prefixHits GUARDED_BY(m_mutex) = 0;
    std::array<std::uint64_t, kStatusCodeCount> m_byStatus GUARDED_BY(m_mutex){};
    std::uint64_t m_submitted GUARDED_BY(m_mutex) = 0;
    std::uint64_t m_batches GUARDED_BY(m_mutex) = 0;
    std::uint64_t m_batchMembers GUARDED_BY(m_mutex) = 0;
    std::uint64_t m_inputTokens GUARDED_BY(m_mutex) = 0;
    std::uint64_t m_outputTokens GUARDED_BY(m_mutex) = 0;
    std::int64_t m_realTokens GUARDED_BY(m_mutex) = 0;
    std::int64_t m_paddedTokens GUARDED_BY(m_mutex) = 0;
    std::vector<std::uint64_t> m_batchSizes GUARDED_BY(m_mutex);
    std::vector<BatchRecord> m_recent GUARDED_BY(m_mutex); // ring
    std::size_t m_recentNext GUARDED_BY(m_mutex) = 0;
    int m_instancesSeen GUARDED_BY(m_mutex) = 0;
    struct QueueStats {
        std::uint64_t requests = 0, batches = 0, members = 0;
        std::int64_t realTokens = 0, paddedTokens = 0;
        LatencyHistogram total;
    };
    std::vector<QueueStats> m_queues GUARDED_BY(m_mutex);
    std::uint64_t m_cacheHits GUARDED_BY(m_mutex) = 0;
};

LatencySummary summarize(const LatencyHistogram &h);

} // namespace bp
