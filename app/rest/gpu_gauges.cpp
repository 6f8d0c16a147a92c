#include "gpu_gauges.h"

#include <nlohmann/json.hpp>

namespace bp::rest {

nlohmann::json toJson(const GpuReading &r)
{
    return nlohmann::json{{"index", r.index},
                          {"name", r.name},
                          {"utilization_ratio", r.sample.gpuUtilPercent / 100.0},
                          {"memory_bandwidth_utilization_ratio", r.sample.memoryUtilPercent / 100.0},
                          {"memory_used_bytes", r.sample.memoryUsedBytes},
                          {"memory_total_bytes", r.sample.memoryTotalBytes}};
}

GpuGauges::GpuGauges(std::shared_ptr<app::NvmlSampler> sampler, std::chrono::milliseconds period,
                     QObject *parent)
    : QObject(parent), m_sampler(std::move(sampler))
{
    if (!m_sampler || !m_sampler->available())
        return;
    sample(); // the first scrape already has a reading
    m_timer.setInterval(period);
    connect(&m_timer, &QTimer::timeout, this, &GpuGauges::sample);
    m_timer.start();
}

void GpuGauges::sample()
{
    auto s = m_sampler->sample();
    if (!s) {
        m_latest.reset();
        return;
    }
    if (!m_latest)
        m_latest = GpuReading{m_sampler->deviceIndex(), m_sampler->deviceName(), {}};
    m_latest->sample = *s;
}

} // namespace bp::rest
