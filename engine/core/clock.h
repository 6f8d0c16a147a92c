// Time in the engine. All scheduling decisions take `now` as an argument;
// only the scheduler thread (and tests, through FakeClock) decide what `now`
// is. Policies never read a clock themselves.
#pragma once

#include <atomic>
#include <chrono>

namespace bp {

using SteadyClock = std::chrono::steady_clock;
using TimePoint = SteadyClock::time_point;
using Duration = std::chrono::nanoseconds;

inline double toSeconds(Duration d)
{
    return std::chrono::duration<double>(d).count();
}
inline double toMicros(Duration d)
{
    return std::chrono::duration<double, std::micro>(d).count();
}
inline Duration fromSeconds(double s)
{
    return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

// Injectable clock (tensorflow/serving's Env idea). Thread-safe.
class Clock {
public:
    virtual ~Clock() = default;
    virtual TimePoint now() const = 0;
};

class RealClock final : public Clock {
public:
    TimePoint now() const override { return SteadyClock::now(); }
    static RealClock &instance()
    {
        static RealClock clock;
        return clock;
    }
};

// A clock that moves only when told to. Starts at an arbitrary fixed epoch so
// that time points are never the default-constructed "zero".
class FakeClock final : public Clock {
public:
    FakeClock() : m_now(TimePoint(std::chrono::seconds(1000)).time_since_epoch().count()) {}
    TimePoint now() const override { return TimePoint(Duration(m_now.load())); }
    void advance(Duration d) { m_now.fetch_add(d.count()); }
    void set(TimePoint t) { m_now.store(t.time_since_epoch().count()); }

private:
    std::atomic<Duration::rep> m_now;
};

} // namespace bp
