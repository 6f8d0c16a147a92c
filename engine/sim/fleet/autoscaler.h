// Autoscaler policies: what a fleet's autoscaler decides at
// each decision period from what it can observe, as pure objects with no
// clock of their own. The fleet simulation turns them on the virtual clock;
// `autoscale --watch` turns them on a live fleet's /metrics and only prints.
//
//  - reactive: Kubernetes' HPA algorithm (as KEDA also runs it) on one
//    metric averaged per replica: desired = ceil(current × value / target),
//    no change inside the tolerance (10% by default), the stabilization
//    windows (scale up to the lowest recommendation of the up window, down to
//    the highest of the down window: HPA's defaults are 0 s and 300 s), and
//    min/max replicas. Replicas still starting count with a value of 0, as
//    HPA assumes for a pod without metrics when it scales up, so a burst
//    does not scale up again for the replicas already on their way;
//  - scheduled: a plan's replicas per slot (`plan`'s hour-of-day schedule),
//    asked for `lead` early so that a cold start ends before the slot begins;
//  - predictive: Holt's linear exponential smoothing (a level and a trend)
//    of the arrival rate per period, forecast one cold start ahead, divided
//    by what one replica serves within the SLO. Holt because the horizon
//    that matters is a cold start (minutes), where a ramp's trend is what a
//    reactive policy misses; a daily season would need a day of history the
//    advisory mode does not have, and the scheduled policy already carries
//    the day's shape. Scale-down goes through the same stabilization window
//    as the reactive policy.
#pragma once

#include "engine/sim/simulation/fleet_scaling.h"

#include "engine/core/result.h"

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bp {

enum class ScaleMetric { QueueDepth, RunningSequences, KvUsage, RequestRate };
// "queue", "running", "kv", "rate"
std::string_view scaleMetricName(ScaleMetric metric);
Result<ScaleMetric> parseScaleMetric(std::string_view name);
// The metric's value per replica (KV usage: the ready replicas' mean; the
// others: the fleet's total over ready + starting replicas).
double perReplicaValue(const FleetObservation &o, ScaleMetric metric);

struct ScaleBounds {
    int minReplicas = 1, maxReplicas = 8;
};

// A decision: the replicas wanted from now on, and why, in one line.
struct ScaleDecision {
    int replicas = 0;
    std::string why;
};

class AutoscalePolicy {
public:
    virtual ~AutoscalePolicy() = default;
    // The replicas wanted after observing `o` (the fleet has o.ready +
    // o.starting now). Calls come in time order, one per decision period.
    virtual ScaleDecision decide(const FleetObservation &o) = 0;
    // The policy and its knobs in one line ("reactive queue target 4 ...").
    virtual std::string describe() const = 0;
};

// HPA's stabilization: each recommendation is kept for the longer window;
// a scale-up goes to the lowest recommendation of the up window, a
// scale-down to the highest of the down window, neither past the current
// size. The first call seeds the history with the current size (as HPA
// seeds a new autoscaler's), so nothing scales down before a whole window.
class Stabilizer {
public:
    Stabilizer(double upWindowS, double downWindowS) : m_upS(upWindowS), m_downS(downWindowS) {}
    int apply(double atS, int current, int recommended);

private:
    double m_upS, m_downS;
    std::deque<std::pair<double, int>> m_history; // (time, recommendation)
};

struct ReactiveKnobs {
    ScaleMetric metric = ScaleMetric::QueueDepth;
    double target = 4;        // per replica, in the metric's unit (KV: a ratio)
    double tolerance = 0.1;   // HPA's default
    double upWindowS = 0;     // HPA's default scale-up stabilization
    double downWindowS = 300; // HPA's default scale-down stabilization
    ScaleBounds bounds;
};
Status validate(const ReactiveKnobs &knobs);

class ReactivePolicy final : public AutoscalePolicy {
public:
    explicit ReactivePolicy(ReactiveKnobs knobs);
    ScaleDecision decide(const FleetObservation &o) override;
    std::string describe() const override;

private:
    ReactiveKnobs m_knobs;
    Stabilizer m_stabilizer;
};

struct ScheduledKnobs {
    std::vector<int> replicas; // per slot, repeating (a day of hourly slots)
    double slotS = 3600;
    double leadS = 0; // ask this early (a cold start)
    ScaleBounds bounds{1, 1 << 20};
};
Status validate(const ScheduledKnobs &knobs);

class ScheduledPolicy final : public AutoscalePolicy {
public:
    explicit ScheduledPolicy(ScheduledKnobs knobs) : m_knobs(std::move(knobs)) {}
    ScaleDecision decide(const FleetObservation &o) override;
    std::string describe() const override;
    int slotReplicas(double atS) const;

private:
    std::size_t slotAt(double atS) const; // the slot in force `lead` ahead of atS
    ScheduledKnobs m_knobs;
};

struct PredictiveKnobs {
    double replicaRate = 1;   // requests/s one replica serves within the SLO
    double alpha = 0.5;       // Holt's level smoothing
    double beta = 0.3;        // Holt's trend smoothing
    double horizonS = 180;    // forecast this far ahead (a cold start)
    double periodS = 15;      // the decision period (the trend is per period)
    double headroom = 1.0;    // replicas = ceil(forecast × headroom / replicaRate)
    double downWindowS = 300; // scale-down stabilization
    ScaleBounds bounds;
};
Status validate(const PredictiveKnobs &knobs);

class PredictivePolicy final : public AutoscalePolicy {
public:
    explicit PredictivePolicy(PredictiveKnobs knobs);
    ScaleDecision decide(const FleetObservation &o) override;
    std::string describe() const override;
    // The rate forecast one horizon ahead after the last decide(), req/s.
    double forecast() const;

private:
    PredictiveKnobs m_knobs;
    Stabilizer m_stabilizer;
    bool m_primed = false;
    double m_level = 0, m_trend = 0; // req/s, req/s per period
};

// Any policy's knobs, and the policy they describe.
using AutoscaleKnobs = std::variant<ReactiveKnobs, ScheduledKnobs, PredictiveKnobs>;
std::unique_ptr<AutoscalePolicy> makePolicy(const AutoscaleKnobs &knobs);
ScaleBounds boundsOf(const AutoscaleKnobs &knobs);

} // namespace bp
