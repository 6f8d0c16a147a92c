#include "engine/sim/tune/request_overhead.h"

#include <chrono>

namespace bp {

Duration requestOverheadOf(const Calibration &calibration)
{
    if (!calibration.remote || !(calibration.remote->requestOverheadS > 0))
        return Duration::zero();
    return std::chrono::duration_cast<Duration>(
        std::chrono::duration<double>(calibration.remote->requestOverheadS));
}

void addRequestOverhead(RequestRecord &record, Duration overhead)
{
    record.total += overhead;
    if (record.timeToFirstToken > Duration::zero())
        record.timeToFirstToken += overhead;
}

RequestOverheadObserver::RequestOverheadObserver(EngineObserver *inner, Duration overhead)
    : m_inner(inner), m_overhead(overhead)
{
}

void RequestOverheadObserver::onBatchCompleted(const BatchRecord &batch,
                                               std::span<const RequestRecord> requests)
{
    m_shifted.assign(requests.begin(), requests.end());
    for (RequestRecord &r : m_shifted)
        if (r.status == StatusCode::Ok)
            addRequestOverhead(r, m_overhead);
    m_inner->onBatchCompleted(batch, m_shifted);
}

void RequestOverheadObserver::onRequestFailed(const RequestRecord &record)
{
    m_inner->onRequestFailed(record);
}

void RequestOverheadObserver::onRequestServedFromCache(const RequestRecord &record)
{
    m_inner->onRequestServedFromCache(record);
}

void RequestOverheadObserver::onConfigChanged(const ConfigChange &change)
{
    m_inner->onConfigChanged(change);
}

} // namespace bp
