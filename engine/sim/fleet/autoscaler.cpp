#include "engine/sim/fleet/autoscaler.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bp {

namespace {

std::string format(const char *pattern, auto... values)
{
    char line[256];
    std::snprintf(line, sizeof line, pattern, values...);
    return line;
}

int clampTo(const ScaleBounds &b, int replicas)
{
    return std::clamp(replicas, b.minReplicas, b.maxReplicas);
}

Status checkBounds(const ScaleBounds &b)
{
    if (b.minReplicas < 0 || b.maxReplicas < 1 || b.minReplicas > b.maxReplicas)
        return Status(
            StatusCode::InvalidArgument,
            format("replica bounds %d..%d: need 0 <= min <= max, max >= 1", b.minReplicas, b.maxReplicas));
    return Status::ok();
}

Status checkWindow(const char *name, double seconds)
{
    if (!std::isfinite(seconds) || seconds < 0 || seconds > 86400)
        return Status(StatusCode::InvalidArgument, format("%s %g s: need 0 to 86400", name, seconds));
    return Status::ok();
}

} // namespace

std::string_view scaleMetricName(ScaleMetric metric)
{
    switch (metric) {
    case ScaleMetric::QueueDepth: return "queue";
    case ScaleMetric::RunningSequences: return "running";
    case ScaleMetric::KvUsage: return "kv";
    case ScaleMetric::RequestRate: return "rate";
    }
    return "?";
}

Result<ScaleMetric> parseScaleMetric(std::string_view name)
{
    for (ScaleMetric m : {ScaleMetric::QueueDepth, ScaleMetric::RunningSequences, ScaleMetric::KvUsage,
                          ScaleMetric::RequestRate})
        if (name == scaleMetricName(m))
            return m;
    return Status(StatusCode::InvalidArgument,
                  "unknown scale metric '" + std::string(name) + "' (queue, running, kv, rate)");
}

double perReplicaValue(const FleetObservation &o, ScaleMetric metric)
{
    // Starting replicas count with a value of 0 (HPA's assumption for a pod
    // without metrics when it scales up).
    const int replicas = std::max(1, o.ready + o.starting);
    switch (metric) {
    case ScaleMetric::QueueDepth: return o.waiting / replicas;
    case ScaleMetric::RunningSequences: return o.running / replicas;
    case ScaleMetric::KvUsage: return o.kvUsage * o.ready / replicas;
    case ScaleMetric::RequestRate: return o.arrivalRate / replicas;
    }
    return 0;
}

int Stabilizer::apply(double atS, int current, int recommended)
{
    // As HPA does, a policy's first decision finds the current size in its
    // history: a fresh autoscaler does not scale down before its window.
    if (m_history.empty())
        m_history.emplace_back(atS, current);
    const double keep = std::max(m_upS, m_downS);
    while (!m_history.empty() && m_history.front().first <= atS - keep)
        m_history.pop_front();
    // Earlier recommendations count inside their window (a window of 0:
    // none); this one always does.
    int lowest = recommended, highest = recommended;
    for (const auto &[t, r] : m_history) {
        if (t > atS - m_upS)
            lowest = std::min(lowest, r);
        if (t > atS - m_downS)
            highest = std::max(highest, r);
    }
    m_history.emplace_back(atS, recommended);
    if (recommended > current)
        return std::max(current, lowest);
    if (recommended < current)
        return std::min(current, highest);
    return current;
}

Status validate(const ReactiveKnobs &k)
{
    if (!std::isfinite(k.target) || k.target <= 0)
        return Status(StatusCode::InvalidArgument, format("reactive target %g: need > 0", k.target));
    if (k.metric == ScaleMetric::KvUsage && k.target > 1)
        return Status(
            StatusCode::InvalidArgument,
            format("reactive target %g for kv: KV usage is a ratio, need 0 < target <= 1", k.target));
    if (!std::isfinite(k.tolerance) || k.tolerance < 0 || k.tolerance >= 1)
        return Status(StatusCode::InvalidArgument,
                      format("tolerance %g: need 0 <= tolerance < 1", k.tolerance));
    if (Status s = checkWindow("scale-up window", k.upWindowS); !s)
        return s;
    if (Status s = checkWindow("scale-down window", k.downWindowS); !s)
        return s;
    return checkBounds(k.bounds);
}

ReactivePolicy::ReactivePolicy(ReactiveKnobs knobs)
    : m_knobs(knobs), m_stabilizer(knobs.upWindowS, knobs.downWindowS)
{
}

ScaleDecision ReactivePolicy::decide(const FleetObservation &o)
{
    const int current = o.ready + o.starting;
    const double value = perReplicaValue(o, m_knobs.metric);
    const double ratio = value / m_knobs.target;
    int recommended = current;
    std::string reason;
    if (current == 0) {
        // Scale from zero (KEDA's activation): one replica once anything arrives.
        const bool load = o.waiting > 0 || o.running > 0 || o.arrivalRate > 0;
        recommended = load ? 1 : 0;
        reason = load ? "load on an empty fleet" : "no load";
    } else if (std::abs(ratio - 1) <= m_knobs.tolerance) {
        reason = format("within tolerance %.0f%%", m_knobs.tolerance * 100);
    } else {
        recommended = int(std::ceil(current * ratio - 1e-9));
    }
    const int bounded = clampTo(m_knobs.bounds, recommended);
    const int wanted = clampTo(m_knobs.bounds, m_stabilizer.apply(o.atS, current, bounded));
    if (reason.empty())
        reason = format("ratio %.2f", ratio);
    if (wanted != bounded)
        reason += wanted > bounded
                      ? format(", held at %d by the %g s scale-down window", wanted, m_knobs.downWindowS)
                      : format(", held at %d by the %g s scale-up window", wanted, m_knobs.upWindowS);
    else if (bounded != recommended)
        reason += format(", bounded to %d..%d", m_knobs.bounds.minReplicas, m_knobs.bounds.maxReplicas);
    return {wanted, format("%s %.2f per replica vs target %g (%s): %d -> %d",
                           std::string(scaleMetricName(m_knobs.metric)).c_str(), value, m_knobs.target,
                           reason.c_str(), current, wanted)};
}

std::string ReactivePolicy::describe() const
{
    return format("reactive %s target %g tolerance %g up %gs down %gs replicas %d..%d",
                  std::string(scaleMetricName(m_knobs.metric)).c_str(), m_knobs.target, m_knobs.tolerance,
                  m_knobs.upWindowS, m_knobs.downWindowS, m_knobs.bounds.minReplicas,
                  m_knobs.bounds.maxReplicas);
}

Status validate(const ScheduledKnobs &k)
{
    if (k.replicas.empty())
        return Status(StatusCode::InvalidArgument, "scheduled policy: the schedule has no slots");
    if (!std::isfinite(k.slotS) || k.slotS <= 0)
        return Status(StatusCode::InvalidArgument, format("scheduled slot %g s: need > 0", k.slotS));
    for (int r : k.replicas)
        if (r < 0)
            return Status(StatusCode::InvalidArgument,
                          format("scheduled policy: a slot asks %d replicas", r));
    if (Status s = checkWindow("scheduled lead", k.leadS); !s)
        return s;
    return checkBounds(k.bounds);
}

std::size_t ScheduledPolicy::slotAt(double atS) const
{
    const auto slot = std::int64_t(std::floor((atS + m_knobs.leadS) / m_knobs.slotS));
    const auto n = std::int64_t(m_knobs.replicas.size());
    return std::size_t(((slot % n) + n) % n);
}

int ScheduledPolicy::slotReplicas(double atS) const
{
    return clampTo(m_knobs.bounds, m_knobs.replicas[slotAt(atS)]);
}

ScaleDecision ScheduledPolicy::decide(const FleetObservation &o)
{
    const int wanted = slotReplicas(o.atS);
    return {wanted, format("schedule slot %zu asks %d (%g s ahead): %d -> %d", slotAt(o.atS), wanted,
                           m_knobs.leadS, o.ready + o.starting, wanted)};
}

std::string ScheduledPolicy::describe() const
{
    std::string slots;
    for (int r : m_knobs.replicas)
        slots += (slots.empty() ? "" : ",") + std::to_string(r);
    return format("scheduled %zu slots of %g s (%s) lead %gs", m_knobs.replicas.size(), m_knobs.slotS,
                  slots.c_str(), m_knobs.leadS);
}

Status validate(const PredictiveKnobs &k)
{
    if (!std::isfinite(k.replicaRate) || k.replicaRate <= 0)
        return Status(StatusCode::InvalidArgument,
                      format("predictive replica rate %g req/s: need > 0", k.replicaRate));
    if (!(k.alpha > 0 && k.alpha <= 1) || !(k.beta >= 0 && k.beta <= 1))
        return Status(StatusCode::InvalidArgument,
                      format("predictive smoothing alpha %g beta %g: need 0 < alpha <= 1, 0 <= beta <= 1",
                             k.alpha, k.beta));
    if (!std::isfinite(k.periodS) || k.periodS <= 0)
        return Status(StatusCode::InvalidArgument, format("predictive period %g s: need > 0", k.periodS));
    if (!std::isfinite(k.headroom) || k.headroom < 1 || k.headroom > 10)
        return Status(StatusCode::InvalidArgument,
                      format("predictive headroom %g: need 1 to 10", k.headroom));
    if (Status s = checkWindow("predictive horizon", k.horizonS); !s)
        return s;
    if (Status s = checkWindow("scale-down window", k.downWindowS); !s)
        return s;
    return checkBounds(k.bounds);
}

PredictivePolicy::PredictivePolicy(PredictiveKnobs knobs) : m_knobs(knobs), m_stabilizer(0, knobs.downWindowS)
{
}

double PredictivePolicy::forecast() const
{
    return std::max(0.0, m_level + m_trend * (m_knobs.horizonS / m_knobs.periodS));
}

ScaleDecision PredictivePolicy::decide(const FleetObservation &o)
{
    const double rate = std::max(0.0, o.arrivalRate);
    if (!m_primed) {
        m_level = rate;
        m_trend = 0;
        m_primed = true;
    } else {
        const double previous = m_level;
        m_level = m_knobs.alpha * rate + (1 - m_knobs.alpha) * (m_level + m_trend);
        m_trend = m_knobs.beta * (m_level - previous) + (1 - m_knobs.beta) * m_trend;
    }
    const double ahead = forecast();
    const int current = o.ready + o.starting;
    const int recommended =
        clampTo(m_knobs.bounds, int(std::ceil(ahead * m_knobs.headroom / m_knobs.replicaRate - 1e-9)));
    const int wanted = clampTo(m_knobs.bounds, m_stabilizer.apply(o.atS, current, recommended));
    return {wanted, format("rate %.2f req/s, forecast %.2f in %g s at %g per replica: %d -> %d%s", rate,
                           ahead, m_knobs.horizonS, m_knobs.replicaRate, current, wanted,
                           wanted != recommended ? " (held by the scale-down window)" : "")};
}

std::string PredictivePolicy::describe() const
{
    return format(
        "predictive holt alpha %g beta %g horizon %gs replica %g req/s headroom %g down %gs replicas %d..%d",
        m_knobs.alpha, m_knobs.beta, m_knobs.horizonS, m_knobs.replicaRate, m_knobs.headroom,
        m_knobs.downWindowS, m_knobs.bounds.minReplicas, m_knobs.bounds.maxReplicas);
}

std::unique_ptr<AutoscalePolicy> makePolicy(const AutoscaleKnobs &knobs)
{
    return std::visit(
        [](const auto &k) -> std::unique_ptr<AutoscalePolicy> {
            using K = std::decay_t<decltype(k)>;
            if constexpr (std::is_same_v<K, ReactiveKnobs>)
                return std::make_unique<ReactivePolicy>(k);
            else if constexpr (std::is_same_v<K, ScheduledKnobs>)
                return std::make_unique<ScheduledPolicy>(k);
            else
                return std::make_unique<PredictivePolicy>(k);
        },
        knobs);
}

ScaleBounds boundsOf(const AutoscaleKnobs &knobs)
{
    return std::visit([](const auto &k) { return k.bounds; }, knobs);
}

} // namespace bp
