#include "metric_sampler.h"

#include <numeric>

namespace bp {

MetricSample sampleOf(const Snapshot &s, TimePoint epoch, std::uint64_t droppedRows)
{
    MetricSample m;
    m.at = s.takenAt - epoch;
    m.requestsPerS = s.requestsPerS;
    m.inputTokensPerS = s.inputTokensPerS;
    m.outputTokensPerS = s.outputTokensPerS;
    m.totalP50Us = s.total.p50Us;
    m.totalP90Us = s.total.p90Us;
    m.totalP99Us = s.total.p99Us;
    m.queueWaitP99Us = s.queueWait.p99Us;
    m.queueDepth = s.queueDepth;
    m.inFlight = s.inFlightBatches;
    m.meanBatchSize = s.meanBatchSize;
    m.paddingEfficiency = s.paddingEfficiency;
    m.busyFraction = s.busyFraction;
    m.submitted = s.submitted;
    m.completed = s.byStatus[std::size_t(StatusCode::Ok)];
    m.failed = std::accumulate(s.byStatus.begin(), s.byStatus.end(), std::uint64_t(0)) - m.completed;
    m.configVersion = s.configVersion;
    m.droppedRows = droppedRows;
    return m;
}

MetricSampler::MetricSampler(const Engine &engine, TraceSink &sink, Duration period)
    : MetricSampler(
          [&engine, &sink] { return sampleOf(engine.snapshot(), sink.epoch(), sink.droppedRows()); }, sink,
          period)
{
}

MetricSampler::MetricSampler(std::function<MetricSample()> take, TraceSink &sink, Duration period)
    : m_sink(sink), m_take(std::move(take)), m_period(period)
{
}

MetricSampler::~MetricSampler()
{
    stop();
}

void MetricSampler::start()
{
    if (m_thread.joinable())
        return;
    {
        std::lock_guard lock(m_mutex);
        m_stop = false;
    }
    m_thread = std::thread([this] { run(); });
}

void MetricSampler::stop()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_cv.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

void MetricSampler::sampleNow()
{
    m_sink.recordSample(m_take());
}

void MetricSampler::run()
{
    std::unique_lock lock(m_mutex);
    TimePoint next = SteadyClock::now() + m_period;
    while (!m_cv.wait_until(lock, next, [this] { return m_stop; })) {
        lock.unlock();
        sampleNow();
        lock.lock();
        next += m_period;
        if (const TimePoint now = SteadyClock::now(); next < now)
            next = now + m_period; // fell behind (suspended): no burst of catch-up samples
    }
}

} // namespace bp
