#include "chart_history.h"

#include <algorithm>

namespace bp::ui {

namespace {
constexpr double kCountsKeptS = 60; // batch-size counts kept for the distribution
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
double ms(double us)
{
    return us / 1000.0;
}
// A window percentile, or "no data" when the window holds no value.
double msOrNone(const LatencySummary &s, double LatencySummary::*field)
{
    return s.count ? ms(s.*field) : ChartSample::kNone;
}
} // namespace

GoodputSlos GoodputSlos::of(const BatchingConfig &c)
{
    return {1000 * toSeconds(c.goodput.ttft), 1000 * toSeconds(c.goodput.tpot),
            1000 * toSeconds(c.goodput.e2e)};
}

ChartHistory::ChartHistory(std::size_t capacity) : m_ring(std::max<std::size_t>(capacity, 2)) {}

void ChartHistory::append(const ChartSample &sample)
{
    if (m_count < m_ring.size()) {
        m_ring[(m_head + m_count) % m_ring.size()] = sample;
        ++m_count;
    } else {
        m_ring[m_head] = sample;
        m_head = (m_head + 1) % m_ring.size();
    }
    // Markers older than the history are of no use any more.
    while (!m_markers.empty() && m_markers.front().t < at(0).t)
        m_markers.pop_front();
}

void ChartHistory::clear()
{
    m_head = m_count = 0;
    m_markers.clear();
    m_counts.clear();
}

void ChartHistory::add(const Snapshot &s, const app::HostSample *host)
{
    ChartSample c;
    c.t = s.uptimeS;
    c.totalP50Ms = ms(s.total.p50Us);
    c.totalP90Ms = ms(s.total.p90Us);
    c.totalP99Ms = ms(s.total.p99Us);
    c.queueP50Ms = ms(s.queueWait.p50Us);
    c.queueP90Ms = ms(s.queueWait.p90Us);
    c.queueP99Ms = ms(s.queueWait.p99Us);
    c.requestsPerS = s.requestsPerS;
    c.inputTokensPerS = s.inputTokensPerS;
    c.outputTokensPerS = s.outputTokensPerS;
    c.busyPercent = 100 * s.busyFraction;
    c.queueDepth = double(s.queueDepth);
    c.paddingPercent = 100 * s.paddingEfficiency;
    c.meanBatchSize = s.meanBatchSize;
    c.ttftP50Ms = msOrNone(s.timeToFirstToken, &LatencySummary::p50Us);
    c.ttftP99Ms = msOrNone(s.timeToFirstToken, &LatencySummary::p99Us);
    c.tpotP50Ms = msOrNone(s.timePerOutputToken, &LatencySummary::p50Us);
    c.tpotP99Ms = msOrNone(s.timePerOutputToken, &LatencySummary::p99Us);
    c.goodputPerS = s.goodputPerS;
    c.runningSequences = double(s.runningSequences);
    c.waitingSequences = double(s.waitingSequences);
    c.kvPercent = s.kvCapacityTokens > 0 ? 100 * s.kvUsageRatio : ChartSample::kNone;
    c.kvTokens = double(s.kvTokens);
    c.tokensPerStep = s.tokensPerStep;
    if (s.config.prefixCache.enabled) {
        c.prefixHitPercent = 100 * s.prefixCacheHitRate;
        c.prefixCacheTokens = double(s.prefixCacheTokens);
    }
    m_slos = GoodputSlos::of(s.config);
    m_generated = m_generated || s.timeToFirstTokenAll.count > 0 || s.config.policy == PolicyKind::Continuous;
    if (host) {
        c.cpuPercent = host->processCpuPercent;
        if (host->gpu) {
            c.gpuPercent = host->gpu->gpuUtilPercent;
            c.memBwPercent = host->gpu->memoryUtilPercent;
            c.memUsedGiB = double(host->gpu->memoryUsedBytes) / kBytesPerGiB;
        }
    }
    if (!empty() && c.t < latest().t) // an engine restart would go back in time
        clear();
    append(c);
    addMarkers(s);
    addBatchCounts(s);
}

void ChartHistory::addMarkers(const Snapshot &s)
{
    for (const ConfigChange &change : s.configHistory) {
        if (change.version <= m_lastVersion)
            continue;
        ConfigMarker m;
        m.t = s.uptimeS - toSeconds(s.takenAt - change.at);
        m.version = change.version;
        m.summary = QString::fromStdString(change.summary);
        m.origin = QString::fromStdString(change.origin);
        m_markers.push_back(std::move(m));
        m_lastVersion = change.version;
    }
}

void ChartHistory::addBatchCounts(const Snapshot &s)
{
    // An entry only when the counts changed: the counts "as of" time t are
    // those of the newest entry at or before t, so idle stretches cost nothing.
    if (m_counts.empty() || m_counts.back().counts != s.batchSizeCounts)
        m_counts.push_back({s.uptimeS, s.batchSizeCounts});
    while (m_counts.size() > 2 && m_counts[1].t < s.uptimeS - kCountsKeptS)
        m_counts.pop_front();
}

std::vector<double> ChartHistory::batchSizeShare(double windowS) const
{
    if (m_counts.size() < 2 || empty())
        return {};
    const Counts &now = m_counts.back();
    // The newest counts at or before the start of the window.
    const double from = latest().t - windowS;
    const Counts *base = &m_counts.front();
    for (const Counts &c : m_counts) {
        if (c.t > from)
            break;
        base = &c;
    }
    std::vector<double> share(now.counts.size(), 0.0);
    double total = 0;
    for (std::size_t i = 1; i < now.counts.size(); ++i) {
        const std::uint64_t before = i < base->counts.size() ? base->counts[i] : 0;
        share[i] = double(now.counts[i] - std::min(now.counts[i], before));
        total += share[i];
    }
    if (total == 0)
        return {};
    for (double &v : share)
        v = 100 * v / total;
    while (!share.empty() && share.back() == 0)
        share.pop_back();
    return share;
}

std::size_t ChartHistory::firstAtOrAfter(double t) const
{
    std::size_t lo = 0, hi = m_count;
    while (lo < hi) {
        const std::size_t mid = (lo + hi) / 2;
        if (at(mid).t < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

} // namespace bp::ui
