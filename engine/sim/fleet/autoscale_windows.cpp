#include "engine/sim/fleet/autoscale_windows.h"

#include <algorithm>
#include <cmath>

namespace bp::autoscale {

namespace {

// Nearest-rank p99 of `v` (reordered).
double p99(std::vector<double> &v)
{
    if (v.empty())
        return 0;
    const auto k = std::size_t(std::ceil(0.99 * double(v.size()))) - 1;
    std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(k), v.end());
    return v[k];
}

bool meets(const Ended &e, const TuneSlo &slo)
{
    if (!e.ok)
        return false;
    const auto within = [](double value, Duration bound) {
        return bound <= Duration::zero() || value <= toSeconds(bound);
    };
    return within(e.ttftS, slo.ttftP99) && within(e.tpotS, slo.tpotP99) && within(e.totalS, slo.e2eP99);
}

} // namespace

void Billing::at(double t, int delta)
{
    seconds += double(count) * std::max(0.0, t - lastS);
    lastS = std::max(lastS, t);
    if (delta == 0)
        return;
    count += delta;
    if (!steps.empty() && steps.back().first == t)
        steps.back().second = count;
    else
        steps.emplace_back(t, count);
}

double Billing::mean(double b, double e) const
{
    if (e <= b || steps.empty())
        return 0;
    double area = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        const double from = std::max(b, steps[i].first);
        const double to = std::min(e, i + 1 < steps.size() ? steps[i + 1].first : kInf);
        if (to > from)
            area += double(steps[i].second) * (to - from);
    }
    return area / (e - b);
}

ScaleLog::ScaleLog(AutoscaleRun &r, int replicas) : run(r)
{
    billing.at(0, replicas);
    phase.assign(std::size_t(replicas), ReplicaPhase::Ready);
}

void ScaleLog::onEvent(const ScaleEvent &e)
{
    const auto slot = std::size_t(e.replica);
    if (slot >= phase.size()) {
        phase.resize(slot + 1, ReplicaPhase::Gone);
        coldOf.resize(slot + 1, 0);
    }
    coldOf.resize(phase.size(), 0);
    const ReplicaPhase before = phase[slot];
    phase[slot] = e.phase;
    switch (e.phase) {
    case ReplicaPhase::Starting:
        ++run.scaleUps;
        billing.at(e.atS, +1);
        coldOf[slot] = cold.size();
        cold.push_back({e.atS, kInf});
        break;
    case ReplicaPhase::Ready: cold[coldOf[slot]].endS = e.atS; break;
    case ReplicaPhase::Draining:
        ++run.scaleDowns;
        ++draining;
        break;
    case ReplicaPhase::Gone:
        billing.at(e.atS, -1);
        if (before == ReplicaPhase::Starting) { // cancelled before it served
            ++run.scaleDowns;
            cold[coldOf[slot]].endS = e.atS;
        } else {
            --draining;
        }
        break;
    }
}

MissedWindows::MissedWindows(const AutoscaleSimRequest &r, std::span<const PlannedArrival> arrivals,
                             std::atomic<bool> &stop)
    : m_r(r),
      m_stop(stop), m_bounds{toSeconds(r.slo.ttftP99), toSeconds(r.slo.tpotP99), toSeconds(r.slo.e2eP99)}
{
    if (r.stopAboveMissedWindows > 0 && !arrivals.empty()) {
        const auto windowOf = [&r](double s) { return std::size_t(std::max(0.0, s) / r.windowS); };
        m_counts.resize(windowOf(toSeconds(arrivals.back().offset)) + 1);
        for (const PlannedArrival &a : arrivals)
            ++m_counts[std::min(m_counts.size() - 1, windowOf(toSeconds(a.offset)))].n;
    }
}

void MissedWindows::count(const Ended &e)
{
    if (m_counts.empty() || e.unservable)
        return;
    WindowCount &w =
        m_counts[std::min(m_counts.size() - 1, std::size_t(std::max(0.0, e.arrivalS) / m_r.windowS))];
    const double values[3] = {e.ttftS, e.tpotS, e.totalS};
    const auto allowed = w.n - std::size_t(std::ceil(0.99 * double(w.n)));
    for (int b = 0; b < 3; ++b)
        if (m_bounds[b] > 0 && (!e.ok || values[b] > m_bounds[b]) && ++w.over[b] > allowed && !w.missed) {
            w.missed = true;
            if (++m_missedWindows > m_r.stopAboveMissedWindows) {
                m_missedOut = true;
                m_stop.store(true, std::memory_order_relaxed);
            }
        }
}

void judgeWindows(AutoscaleRun &run, const std::vector<Ended> &ended, const std::vector<ColdInterval> &cold,
                  const Billing &billing, const AutoscaleSimRequest &r)
{
    double last = 0;
    for (const Ended &e : ended)
        last = std::max(last, e.arrivalS);
    const auto windows = std::size_t(std::floor(last / r.windowS)) + 1;
    run.windows.assign(windows, {});
    std::vector<std::vector<std::size_t>> members(windows);
    for (std::size_t i = 0; i < ended.size(); ++i)
        if (!ended[i].unservable && ended[i].arrivalS >= 0)
            members[std::min(windows - 1, std::size_t(ended[i].arrivalS / r.windowS))].push_back(i);
    const double coldS = std::max(0.0, r.coldStartS);
    auto duringColdStart = [&](double t) {
        auto it = std::upper_bound(cold.begin(), cold.end(), t,
                                   [](double x, const ColdInterval &c) { return x < c.beginS; });
        while (it != cold.begin()) {
            --it;
            if (it->beginS < t - coldS - 1e-9)
                break; // no interval is longer than a cold start
            if (it->endS > t)
                return true;
        }
        return false;
    };
    std::vector<double> ttft, tpot, total;
    for (std::size_t w = 0; w < windows; ++w) {
        AutoscaleWindow &aw = run.windows[w];
        aw.beginS = double(w) * r.windowS;
        aw.lengthS = r.windowS;
        aw.meanReplicas = billing.mean(aw.beginS, aw.beginS + r.windowS);
        ttft.clear();
        tpot.clear();
        total.clear();
        for (std::size_t i : members[w]) {
            const Ended &e = ended[i];
            ++aw.requests;
            aw.failed += !e.ok;
            ttft.push_back(e.ok ? e.ttftS : kInf);
            tpot.push_back(e.ok ? e.tpotS : kInf);
            total.push_back(e.ok ? e.totalS : kInf);
            if (meets(e, r.slo)) {
                ++aw.good;
            } else {
                ++aw.misses;
                aw.coldMisses += duringColdStart(e.arrivalS);
            }
        }
        aw.ttftP99S = p99(ttft);
        aw.tpotP99S = p99(tpot);
        aw.p99S = p99(total);
        const auto within = [](double v, Duration bound) {
            return bound <= Duration::zero() || v <= toSeconds(bound);
        };
        aw.met = within(aw.ttftP99S, r.slo.ttftP99) && within(aw.tpotP99S, r.slo.tpotP99) &&
                 within(aw.p99S, r.slo.e2eP99);
        run.requests += aw.requests;
        run.good += aw.good;
        run.misses += aw.misses;
        run.coldMisses += aw.coldMisses;
        run.windowsMet += aw.met;
    }
}

} // namespace bp::autoscale
