// Virtual time for the two drivers that run the engine on a clock of their
// own, the simulator (engine/sim/simulation/simulator.h) and the virtual-clock
// replay (engine/replay/replay_driver.h): time only moves forward, and on
// its way to a later time it stops at every sample period to take the
// metric sample a MetricSampler would have taken there.
//
// Not thread-safe: the driver's loop is its only caller.
#pragma once

#include "engine/core/clock.h"

#include <algorithm>
#include <functional>

namespace bp {

class VirtualTime {
public:
    // `setClock` moves the driver's clock(s); `sample`, when given, takes a
    // sample at the clock's now every `period` after `start` (zero period: none).
    VirtualTime(TimePoint start, Duration period, std::function<void(TimePoint)> setClock,
                std::function<void()> sample)
        : m_now(start), m_nextSample(start + period), m_period(period), m_setClock(std::move(setClock)),
          m_sample(std::move(sample))
    {
    }

    TimePoint now() const { return m_now; }
    // Samples due by `t` first, then the clock at `t` (never backwards).
    void moveTo(TimePoint t)
    {
        if (m_sample && m_period > Duration::zero())
            while (m_nextSample <= t) {
                set(std::max(m_now, m_nextSample));
                m_sample();
                m_nextSample += m_period;
            }
        set(std::max(m_now, t));
    }
    // The clock at now again (a driver that moved it for a unit's run).
    void reset() { m_setClock(m_now); }

private:
    void set(TimePoint t)
    {
        m_now = t;
        m_setClock(t);
    }

    TimePoint m_now;
    TimePoint m_nextSample;
    Duration m_period;
    std::function<void(TimePoint)> m_setClock;
    std::function<void()> m_sample;
};

} // namespace bp
