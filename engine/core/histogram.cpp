#include "histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace bp {

int LatencyHistogram::bucketIndex(std::int64_t ns)
{
    if (ns < kSub)
        return ns < 0 ? 0 : int(ns);
    const auto v = std::uint64_t(ns);
    const int exponent = std::bit_width(v) - 1; // >= kSubBits
    if (exponent > kMaxExponent)
        return kBuckets - 1;
    const int sub = int(v >> (exponent - kSubBits)) - kSub; // 0..63
    return kSub + (exponent - kSubBits) * kSub + sub;
}

std::int64_t LatencyHistogram::bucketLow(int index)
{
    if (index < kSub)
        return index;
    const int exponent = (index - kSub) / kSub + kSubBits;
    const int sub = (index - kSub) % kSub;
    return std::int64_t(kSub + sub) << (exponent - kSubBits);
}

std::int64_t LatencyHistogram::bucketHigh(int index)
{
    if (index < kSub)
        return index + 1;
    const int exponent = (index - kSub) / kSub + kSubBits;
    return bucketLow(index) + (std::int64_t(1) << (exponent - kSubBits));
}

void LatencyHistogram::record(std::int64_t ns, std::uint64_t count)
{
    if (ns < 0)
        ns = 0;
    m_counts[bucketIndex(ns)] += count;
    if (m_count == 0 || ns < m_min)
        m_min = ns;
    m_max = std::max(m_max, ns);
    m_count += count;
    m_sum += ns * std::int64_t(count);
}

void LatencyHistogram::merge(const LatencyHistogram &o)
{
    if (o.m_count == 0)
        return;
    for (int i = 0; i < kBuckets; ++i)
        m_counts[i] += o.m_counts[i];
    m_min = m_count == 0 ? o.m_min : std::min(m_min, o.m_min);
    m_max = std::max(m_max, o.m_max);
    m_count += o.m_count;
    m_sum += o.m_sum;
}

void LatencyHistogram::clear()
{
    // Every counted value lies in [min, max]: only their buckets can be set
    // (a window's slot is cleared every 250 ms; the whole table is 19 KB).
    if (m_count > 0)
        std::fill(m_counts.begin() + bucketIndex(m_min), m_counts.begin() + bucketIndex(m_max) + 1,
                  std::uint64_t(0));
    m_count = 0;
    m_sum = 0;
    m_min = 0;
    m_max = 0;
}

std::int64_t LatencyHistogram::quantile(double q) const
{
    if (m_count == 0)
        return 0;
    q = std::clamp(q, 0.0, 1.0);
    // rank of the q-th value, 1-based (nearest-rank definition)
    const auto rank = std::max<std::uint64_t>(1, std::uint64_t(std::ceil(q * double(m_count))));
    std::uint64_t seen = 0;
    for (int i = 0; i < kBuckets; ++i) {
        seen += m_counts[i];
        if (seen >= rank) {
            const std::int64_t mid = i < kSub ? i : (bucketLow(i) + bucketHigh(i) - 1) / 2;
            return std::clamp(mid, m_min, m_max);
        }
    }
    return m_max;
}

std::uint64_t LatencyHistogram::countAtOrBelow(std::int64_t ns) const
{
    if (ns < 0)
        return 0;
    const int last = bucketIndex(ns);
    std::uint64_t n = 0;
    for (int i = 0; i < last; ++i)
        n += m_counts[i];
    // the bucket holding `ns` counts entirely only when ns is its last value
    if (bucketHigh(last) - 1 <= ns)
        n += m_counts[last];
    return n;
}

} // namespace bp
