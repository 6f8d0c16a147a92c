// The books of one autoscaling run (autoscale_sim.h; internal to
// engine/sim/fleet/): each request as it ended, the replicas' phases as the
// simulator reports them (scale-ups and -downs, cold starts, the replicas
// billed over time), the early stop on windows surely missed, and the
// judgement of the windows at the end.
#pragma once

#include "engine/sim/fleet/autoscale_sim.h"

#include <atomic>
#include <limits>
#include <utility>
#include <vector>

namespace bp::autoscale {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

// One request as it ended: what the window figures need.
struct Ended {
    float ttftS = 0, tpotS = 0, totalS = 0;
    double arrivalS = -1; // -1: never reported
    bool ok = false, unservable = false;
};

// A replica asked for, from the decision until it served or was cancelled.
struct ColdInterval {
    double beginS = 0, endS = kInf;
};

// The replicas billed over time (a step function), integrated.
struct Billing {
    double lastS = 0, seconds = 0;
    int count = 0;
    std::vector<std::pair<double, int>> steps; // (from, count)
    // At `t`: the time since the last change billed, then `delta` replicas more.
    void at(double t, int delta);
    // The mean count over [b, e).
    double mean(double b, double e) const;
};

// The replicas' phases as the simulator's scale events report them
// (FleetScaling::onEvent): scale-ups and -downs counted into the run, cold
// intervals, the billing, and how many are draining.
struct ScaleLog {
    AutoscaleRun &run;
    Billing billing;
    std::vector<ColdInterval> cold;
    std::vector<ReplicaPhase> phase; // per slot, the last event's
    std::vector<std::size_t> coldOf; // per slot: its open cold interval
    int draining = 0;
    // `replicas` serving from the start.
    ScaleLog(AutoscaleRun &r, int replicas);
    void onEvent(const ScaleEvent &e);
};

// Windows surely missed, as responses come (stopAboveMissedWindows): a
// window of n requests misses a bound once more than n − ceil(0.99 n) of
// them exceed it (its nearest-rank p99 is then above the bound). n counts
// every arrival, the unservable too, so the count is never early.
class MissedWindows {
public:
    // Off (never stops) unless r.stopAboveMissedWindows > 0.
    MissedWindows(const AutoscaleSimRequest &r, std::span<const PlannedArrival> arrivals,
                  std::atomic<bool> &stop);
    void count(const Ended &e);
    // Stopped for its misses.
    bool missedOut() const { return m_missedOut; }

private:
    struct WindowCount {
        std::size_t n = 0, over[3] = {0, 0, 0};
        bool missed = false;
    };
    const AutoscaleSimRequest &m_r;
    std::atomic<bool> &m_stop;
    std::vector<WindowCount> m_counts;
    double m_bounds[3];
    std::size_t m_missedWindows = 0;
    bool m_missedOut = false;
};

// The run's windows, judged from the requests as they ended, the cold
// intervals and the billing (autoscale_sim.h says how).
void judgeWindows(AutoscaleRun &run, const std::vector<Ended> &ended, const std::vector<ColdInterval> &cold,
                  const Billing &billing, const AutoscaleSimRequest &r);

} // namespace bp::autoscale
