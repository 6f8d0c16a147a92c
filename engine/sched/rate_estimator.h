// Arrival-rate estimate for adaptive delay and hybrid routing: arrivals are
// counted per period and smoothed with an EWMA (alpha 0.5, so a step in the
// rate is followed within ~3 periods). Time comes from the caller, so tests
// and replay drive it with fake or virtual clocks. Not thread-safe (the
// Batcher owns one under the engine lock).
#pragma once

#include "engine/core/clock.h"

#include <cstdint>

namespace bp {

class RateEstimator {
public:
    explicit RateEstimator(Duration period = std::chrono::milliseconds(500), double alpha = 0.5);
    void setPeriod(Duration period);
    void arrival(TimePoint now);
    // Requests per second, as of the last completed period.
    // Rolling periods forward is lazy bookkeeping, hence const.
    double rate(TimePoint now) const;

private:
    void roll(TimePoint now) const;

    Duration m_period;
    double m_alpha;
    mutable bool m_started = false;
    mutable TimePoint m_periodStart{};
    mutable std::uint64_t m_count = 0;
    mutable double m_rate = 0;
};

} // namespace bp
