#include "rate_estimator.h"

namespace bp {

RateEstimator::RateEstimator(Duration period, double alpha) : m_period(period), m_alpha(alpha) {}

void RateEstimator::setPeriod(Duration period)
{
    m_period = period;
}

void RateEstimator::roll(TimePoint now) const
{
    if (!m_started) {
        m_started = true;
        m_periodStart = now;
        return;
    }
    if (now - m_periodStart < m_period)
        return;
    const double periodS = toSeconds(m_period);
    // the period that just ended, then any idle periods after it
    m_rate = m_alpha * (double(m_count) / periodS) + (1 - m_alpha) * m_rate;
    m_count = 0;
    m_periodStart += m_period;
    const auto idle = (now - m_periodStart) / m_period;
    if (idle > 64) { // long silence: the estimate is simply zero
        m_rate = 0;
        m_periodStart = now;
        return;
    }
    for (std::int64_t i = 0; i < idle; ++i) {
        m_rate *= (1 - m_alpha);
        m_periodStart += m_period;
    }
}

void RateEstimator::arrival(TimePoint now)
{
    roll(now);
    ++m_count;
}

double RateEstimator::rate(TimePoint now) const
{
    roll(now);
    return m_rate;
}

} // namespace bp
