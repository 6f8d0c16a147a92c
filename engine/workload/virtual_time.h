// The one virtual-time loop, for the two drivers that run the engine on a
// clock of their own: the simulator (engine/sim/simulation/simulator.h:
// replicas with virtual executors over a cost model) and the virtual-clock
// replay (engine/replay/replay_driver.h: the Engine with manual scheduling
// over the real model, compute taking no virtual time).
//
// VirtualTime: time only moves forward, and on its way to a later time it
// stops at every sample period to take the metric sample a MetricSampler
// would have taken there. runVirtualLoop: the event loop over an arrival
// plan (open-loop arrivals and released follow-ups, arrival_plan.h) and
// the driver's own events, each handled at its time in this order at a tie:
// the driver's early events (a unit's end; the replay's decisions), then
// an arrival, then its late events (the simulator's wake-ups, which so see
// the arrival); after each, the driver decides what it can.
//
// Not thread-safe: the driver's loop is its only caller.
#pragma once

#include "arrival_plan.h"

#include "engine/core/clock.h"

#include <algorithm>
#include <atomic>
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

// What runVirtualLoop drives.
class VirtualDriver {
public:
    virtual ~VirtualDriver() = default;
    // Events that go before an arrival at the same time, and those that go after it.
    virtual std::optional<TimePoint> earlyEvent() = 0;
    virtual std::optional<TimePoint> lateEvent() { return std::nullopt; }
    // The early events due by now (the clock is there).
    virtual void runEarly() = 0;
    // Arrival `index` of the plan arrives now.
    virtual void arrive(std::size_t index) = 0;
    // After every event: decide what can be decided now.
    virtual void settle() = 0;
    // Nothing is planned and no arrival is due: true when the driver found
    // more to do (a drain), false when the run is over.
    virtual bool idle() = 0;
};

// Runs until the plan is exhausted and the driver idle. False when `cancel`
// was set while arrivals were left (the driver then winds down itself).
bool runVirtualLoop(ArrivalPlan &plan, VirtualTime &time, VirtualDriver &driver,
                    const std::atomic<bool> *cancel);

} // namespace bp
