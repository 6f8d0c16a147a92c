#include "adaptive.h"

#include <algorithm>
#include <cmath>

namespace bp {

Duration adaptiveDelay(double rate, int maxBatchSize, const AdaptiveDelayConfig &c)
{
    if (!(rate > 0))
        return c.maxDelay;
    const Duration fillTime = fromSeconds(c.fill * double(maxBatchSize) / rate);
    return std::clamp(fillTime, c.minDelay, c.maxDelay);
}

void SloController::observe(Duration latency, std::uint64_t count)
{
    MutexLock lock(m_mutex);
    m_window.record(latency.count(), count);
}

std::optional<SloController::Adjustment> SloController::evaluate(const BatchingConfig &current, TimePoint now)
{
    const SloControllerConfig &slo = current.slo;
    if (!slo.enabled) {
        m_started = false;
        return std::nullopt;
    }
    if (!m_started) {
        m_started = true;
        m_periodStart = now;
        MutexLock lock(m_mutex);
        m_window.clear();
        return std::nullopt;
    }
    if (now - m_periodStart < slo.period)
        return std::nullopt;
    LatencyHistogram window;
    {
        MutexLock lock(m_mutex);
        window = m_window;
        m_window.clear();
    }
    const Duration elapsed = now - m_periodStart;
    m_periodStart = now;
    constexpr std::uint64_t kMinSamples = 20; // a p99 of fewer says nothing
    if (window.count() < kMinSamples)
        return std::nullopt;

    const Duration p99{window.quantile(0.99)};
    BatchingConfig next = current;
    const int batch = std::clamp(current.maxBatchSize, slo.minBatch, slo.maxBatch);
    const Duration delay = std::clamp(current.maxQueueDelay, slo.minDelay, slo.maxDelay);
    std::string verdict;
    if (p99 > slo.p99Target) {
        next.maxBatchSize = std::max(slo.minBatch, int(std::floor(batch * slo.decrease)));
        next.maxQueueDelay =
            std::max(slo.minDelay, Duration(Duration::rep(double(delay.count()) * slo.decrease)));
        verdict = " > target ";
    } else {
        next.maxBatchSize = std::min(slo.maxBatch, batch + slo.batchStep);
        next.maxQueueDelay = std::min(slo.maxDelay, delay + slo.delayStep);
        verdict = " ≤ target ";
    }
    if (next.maxBatchSize == current.maxBatchSize && next.maxQueueDelay == current.maxQueueDelay)
        return std::nullopt;
    Adjustment a;
    a.config = next;
    a.reason = "p99 " + formatDuration(p99) + verdict + formatDuration(slo.p99Target) + " over " +
               formatDuration(elapsed) + " (" + std::to_string(window.count()) +
               " requests): " + (verdict == " > target " ? "back off" : "probe up");
    return a;
}

} // namespace bp
