// A log-linear latency histogram that keeps the tail: values (nanoseconds)
// below 64 are exact; above, every power-of-two range is split into 64
// linear sub-buckets, so any recorded value is reported within 1.6% while the
// whole table (up to ~18 minutes) is 2,368 counters. Merging is addition, so
// windowed percentiles are sums of per-slot histograms.
//
// Not thread-safe: the owner (MetricsRecorder) guards it.
#pragma once

#include <array>
#include <cstdint>

namespace bp {

class LatencyHistogram {
public:
    static constexpr int kSubBits = 6;
    static constexpr int kSub = 1 << kSubBits; // 64
    static constexpr int kMaxExponent = 40;    // 2^40 ns ≈ 18 min; larger values saturate
    static constexpr int kBuckets = kSub + (kMaxExponent - kSubBits + 1) * kSub;

    void record(std::int64_t ns, std::uint64_t count = 1);
    void merge(const LatencyHistogram &other);
    void clear();

    std::uint64_t count() const { return m_count; }
    std::int64_t max() const { return m_max; }
    std::int64_t min() const { return m_count ? m_min : 0; }
    double mean() const { return m_count ? double(m_sum) / double(m_count) : 0.0; }
    // q in [0, 1]; 0 when empty. The returned value is the bucket's midpoint,
    // clamped to the observed [min, max].
    std::int64_t quantile(double q) const;
    // Count of values <= ns (for Prometheus cumulative buckets).
    std::uint64_t countAtOrBelow(std::int64_t ns) const;

    static int bucketIndex(std::int64_t ns);
    static std::int64_t bucketLow(int index);
    static std::int64_t bucketHigh(int index); // exclusive

private:
    std::array<std::uint64_t, kBuckets> m_counts{};
    std::uint64_t m_count = 0;
    std::int64_t m_sum = 0;
    std::int64_t m_min = 0;
    std::int64_t m_max = 0;
};

} // namespace bp
