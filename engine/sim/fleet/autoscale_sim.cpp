#include "engine/sim/fleet/autoscale_sim.h"

#include "engine/store/trace_store.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <thread>

namespace bp {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

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

int initialReplicas(const AutoscaleKnobs &knobs, const AutoscaleSimRequest &r)
{
    if (r.initialReplicas > 0)
        return r.initialReplicas;
    if (const auto *s = std::get_if<ScheduledKnobs>(&knobs))
        return std::max(1, ScheduledPolicy(*s).slotReplicas(0));
    return std::max(1, boundsOf(knobs).minReplicas);
}

int maxReplicas(const AutoscaleKnobs &knobs)
{
    if (const auto *s = std::get_if<ScheduledKnobs>(&knobs)) {
        const int most = s->replicas.empty() ? 1 : *std::max_element(s->replicas.begin(), s->replicas.end());
        return std::clamp(most, 1, s->bounds.maxReplicas);
    }
    return std::max(1, boundsOf(knobs).maxReplicas);
}

// The replicas billed over time (a step function), integrated.
struct Billing {
    double lastS = 0, seconds = 0;
    int count = 0;
    std::vector<std::pair<double, int>> steps; // (from, count)
    void at(double t, int delta)
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
    // The mean count over [b, e).
    double mean(double b, double e) const
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
};

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

} // namespace

Result<AutoscaleArrivals> loadAutoscaleArrivals(const TraceStore &store, std::int64_t traceId,
                                                double rateScale, const SimulatorOptions &model)
{
    if (!(rateScale > 0))
        return Status(StatusCode::InvalidArgument, "the rate scale must be positive");
    auto info = store.trace(traceId);
    if (!info)
        return info.status();
    if (info->rows == 0)
        return Status(StatusCode::InvalidArgument, "trace " + std::to_string(traceId) + " has no rows");
    std::vector<TraceRow> rows;
    std::vector<PrefixBlocks> hashIds;
    if (Status s = store.traceSlice(traceId, 0, std::int64_t(info->rows), rows, hashIds); !s)
        return s;
    AutoscaleArrivals out;
    for (const TraceRow &row : rows)
        out.outputTokens += std::max(0, row.outputTokens);
    out.arrivals = traceArrivals(rows, std::move(hashIds), info->blockTokens, 0.0, rateScale, model);
    if (!out.arrivals.empty())
        out.spanS = toSeconds(out.arrivals.back().offset);
    return out;
}

AutoscaleRun simulateAutoscale(const SimulatorOptions &model, std::span<const PlannedArrival> arrivals,
                               const AutoscaleSimRequest &r, const AutoscaleKnobs &knobs)
{
    const TimePoint wallStart = SteadyClock::now();
    AutoscaleRun run;
    std::unique_ptr<AutoscalePolicy> policy = makePolicy(knobs);
    run.policy = policy->describe();

    std::vector<Ended> ended(arrivals.size());
    std::vector<ColdInterval> cold;
    std::vector<ReplicaPhase> phase; // per slot, the last event's
    std::vector<std::size_t> coldOf; // per slot: its open cold interval
    Billing billing;
    int draining = 0;
    std::atomic<bool> stop{false};

    SimulatorOptions so = model;
    so.config = r.config;
    so.replicas = initialReplicas(knobs, r);
    so.router.policy = r.router;
    so.routerQueueLimit = r.routerQueueLimit;
    so.observer = nullptr;
    so.onSample = nullptr;
    so.samplePeriod = Duration::zero();
    so.cancel = &stop;
    so.coalesceDecodeRuns = true; // a week is ~10^8 steps (simulator.h)
    billing.at(0, so.replicas);
    phase.assign(std::size_t(so.replicas), ReplicaPhase::Ready);

    FleetScaling scaling;
    scaling.period = fromSeconds(r.periodS);
    scaling.coldStart = fromSeconds(std::max(0.0, r.coldStartS));
    scaling.maxReplicas = maxReplicas(knobs);
    scaling.decide = [&policy](const FleetObservation &o) { return policy->decide(o).replicas; };
    scaling.onDecision = [&](const FleetObservation &o, int wanted) {
        const ReplicaPoint p{o.atS, o.ready, o.starting, draining, wanted};
        const ReplicaPoint *prev = run.timeline.empty() ? nullptr : &run.timeline.back();
        if (!prev || prev->ready != p.ready || prev->starting != p.starting || prev->draining != p.draining ||
            prev->wanted != p.wanted)
            run.timeline.push_back(p);
        billing.at(o.atS, 0);
        if ((r.cancel && r.cancel->load(std::memory_order_relaxed)) ||
            (r.stopAboveReplicaHours > 0 && billing.seconds / 3600.0 > r.stopAboveReplicaHours))
            stop.store(true, std::memory_order_relaxed);
    };
    scaling.onEvent = [&](const ScaleEvent &e) {
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
    };
    so.scaling = std::move(scaling);
    const TimePoint start = so.start;
    // Windows surely missed, as responses come (stopAboveMissedWindows): a
    // window of n requests misses a bound once more than n − ceil(0.99 n)
    // of them exceed it (its nearest-rank p99 is then above the bound). n
    // counts every arrival, the unservable too, so the count is never early.
    struct WindowCount {
        std::size_t n = 0, over[3] = {0, 0, 0};
        bool missed = false;
    };
    std::vector<WindowCount> counts;
    std::size_t missedWindows = 0;
    bool missedOut = false;
    if (r.stopAboveMissedWindows > 0 && !arrivals.empty()) {
        const auto windowOf = [&r](double s) { return std::size_t(std::max(0.0, s) / r.windowS); };
        counts.resize(windowOf(toSeconds(arrivals.back().offset)) + 1);
        for (const PlannedArrival &a : arrivals)
            ++counts[std::min(counts.size() - 1, windowOf(toSeconds(a.offset)))].n;
    }
    const double bounds[3] = {toSeconds(r.slo.ttftP99), toSeconds(r.slo.tpotP99), toSeconds(r.slo.e2eP99)};
    auto countMiss = [&](const Ended &e) {
        if (counts.empty() || e.unservable)
            return;
        WindowCount &w =
            counts[std::min(counts.size() - 1, std::size_t(std::max(0.0, e.arrivalS) / r.windowS))];
        const double values[3] = {e.ttftS, e.tpotS, e.totalS};
        const auto allowed = w.n - std::size_t(std::ceil(0.99 * double(w.n)));
        for (int b = 0; b < 3; ++b)
            if (bounds[b] > 0 && (!e.ok || values[b] > bounds[b]) && ++w.over[b] > allowed && !w.missed) {
                w.missed = true;
                if (++missedWindows > r.stopAboveMissedWindows) {
                    missedOut = true;
                    stop.store(true, std::memory_order_relaxed);
                }
            }
    };
    so.onResponse = [&ended, start, &countMiss](std::size_t index, TimePoint arrival, const Response &resp) {
        Ended &e = ended[index];
        e.arrivalS = toSeconds(arrival - start);
        e.ok = resp.status.isOk();
        e.unservable = resp.status.code() == StatusCode::OutOfRange;
        e.ttftS = float(toSeconds(resp.timing.timeToFirstToken));
        e.tpotS = float(toSeconds(resp.timing.timePerOutputToken));
        e.totalS = float(toSeconds(resp.timing.total));
        if (e.ok && resp.timing.timeToFirstToken <= Duration::zero())
            e.ttftS = e.totalS; // a request-level model's first token is its answer
        countMiss(e);
    };
    if (r.progress) {
        const std::size_t total = arrivals.size();
        so.onProgress = [&r, total](const SimOutcome &soFar) { r.progress(soFar.submitted, total); };
        so.progressEvery = 4096;
    }

    Simulator sim(std::move(so));
    const SimOutcome out = sim.run(arrivals);
    run.status = out.status;
    run.cancelled = r.cancel && r.cancel->load() && out.cancelled;
    run.stopped = out.cancelled && !run.cancelled;
    run.missedOut = run.stopped && missedOut;
    run.replicaHours = out.replicaSeconds / 3600.0;
    run.cost = run.replicaHours * r.replicaCostPerHour;
    run.peakReplicas = out.peakReplicas;
    run.steps = out.batches;
    run.coalescedSteps = out.coalescedSteps;
    run.spanS = toSeconds(out.end - start);
    if (!arrivals.empty())
        run.spanS = std::max(run.spanS, toSeconds(arrivals.back().offset));
    if (out.status && !out.cancelled)
        judgeWindows(run, ended, cold, billing, r);
    run.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    return run;
}

namespace {

// The knobs a search varies, as ladders from the most replicas (index 0) to
// the fewest, one ladder per combination of the other knobs.
std::vector<std::vector<AutoscaleKnobs>> ladders(const AutoscaleKnobs &start)
{
    std::vector<std::vector<AutoscaleKnobs>> out;
    const std::vector<double> scale{0.25, 0.35, 0.5, 0.7, 1, 1.4, 2, 2.8, 4};
    if (const auto *k = std::get_if<ReactiveKnobs>(&start)) {
        for (int extraMin : {0, 1})
            for (double down : {std::min(k->downWindowS, 120.0), std::max(k->downWindowS, 600.0)}) {
                std::vector<AutoscaleKnobs> ladder;
                for (double f : scale) {
                    ReactiveKnobs x = *k;
                    x.target = k->target * f;
                    if (x.metric == ScaleMetric::KvUsage)
                        x.target = std::min(x.target, 0.99);
                    x.downWindowS = down;
                    x.bounds.minReplicas = std::min(k->bounds.maxReplicas, k->bounds.minReplicas + extraMin);
                    ladder.emplace_back(x);
                }
                out.push_back(std::move(ladder));
            }
    } else if (const auto *k = std::get_if<PredictiveKnobs>(&start)) {
        for (int extraMin : {0, 1})
            for (double headroom : {1.0, 1.3}) {
                std::vector<AutoscaleKnobs> ladder;
                for (double f : scale) {
                    PredictiveKnobs x = *k;
                    x.replicaRate = k->replicaRate * f;
                    x.headroom = headroom;
                    x.bounds.minReplicas = std::min(k->bounds.maxReplicas, k->bounds.minReplicas + extraMin);
                    ladder.emplace_back(x);
                }
                out.push_back(std::move(ladder));
            }
    } else if (const auto *k = std::get_if<ScheduledKnobs>(&start)) {
        std::vector<AutoscaleKnobs> ladder;
        for (double f : {2.0, 1.5, 1.0, 0.5, 0.0}) { // a longer lead bills earlier
            ScheduledKnobs x = *k;
            x.leadS = std::max(0.0, k->leadS * f);
            ladder.emplace_back(x);
        }
        out.push_back(std::move(ladder));
    }
    return out;
}

} // namespace

AutoscaleSearchResult searchAutoscale(const SimulatorOptions &model, std::span<const PlannedArrival> arrivals,
                                      const AutoscaleSimRequest &request, const AutoscaleKnobs &start,
                                      const AutoscaleSearch &search)
{
    const TimePoint wallStart = SteadyClock::now();
    AutoscaleSearchResult result;
    const auto all = ladders(start);
    const double arrivalsSpanS = arrivals.empty() ? 0 : toSeconds(arrivals.back().offset);
    std::mutex mutex;
    std::size_t nextLadder = 0;
    double bestHours = 0; // 0: none met yet
    auto evaluate = [&](const AutoscaleKnobs &k) {
        AutoscaleSimRequest r = request;
        {
            std::lock_guard lock(mutex);
            r.stopAboveReplicaHours = bestHours;
        }
        // Past this many missed windows it cannot meet the required share.
        const auto windows = std::size_t(std::floor(arrivalsSpanS / r.windowS)) + 1;
        r.stopAboveMissedWindows =
            std::max<std::size_t>(1, std::size_t(std::floor((1 - search.requiredShare) * double(windows))));
        r.progress = nullptr;
        AutoscaleRun run = simulateAutoscale(model, arrivals, r, k);
        std::lock_guard lock(mutex);
        const bool met =
            !run.stopped && !run.cancelled && run.status && run.windowsMetShare() >= search.requiredShare;
        if (met && (bestHours == 0 || run.replicaHours < bestHours)) {
            bestHours = run.replicaHours;
            result.best = k;
            result.bestRun = run;
        }
        ++result.runs;
        result.cancelled = result.cancelled || run.cancelled;
        if (search.progress)
            search.progress(result.runs, run);
        result.tried.emplace_back(k, run);
        // Stopped for its cost: dearer than the best that met, so only the
        // cheaper end of its ladder can win — search there, as if it met.
        // Stopped for its misses: it did not meet.
        return std::pair{met || (run.stopped && !run.missedOut), run.cancelled};
    };
    auto worker = [&] {
        for (;;) {
            std::size_t ladder = 0;
            {
                std::lock_guard lock(mutex);
                if (nextLadder >= all.size() || result.cancelled)
                    return;
                ladder = nextLadder++;
            }
            // The cheapest rung that meets: bisection (meeting is taken as
            // monotone along the ladder).
            const auto &rungs = all[ladder];
            int lo = 0, hi = int(rungs.size()) - 1;
            while (lo <= hi) {
                const int mid = (lo + hi) / 2;
                const auto [ok, cancelled] = evaluate(rungs[std::size_t(mid)]);
                if (cancelled)
                    return;
                if (ok)
                    lo = mid + 1;
                else
                    hi = mid - 1;
            }
        }
    };
    std::vector<std::thread> threads;
    for (int t = 1; t < std::max(1, search.threads); ++t)
        threads.emplace_back(worker);
    worker();
    for (auto &t : threads)
        t.join();
    result.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    return result;
}

nlohmann::json autoscaleRunJson(const AutoscaleRun &run, bool withTimeline)
{
    const auto finite = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); };
    nlohmann::json windows = nlohmann::json::array();
    for (const AutoscaleWindow &w : run.windows)
        windows.push_back({{"begin_s", w.beginS},
                           {"length_s", w.lengthS},
                           {"requests", w.requests},
                           {"good", w.good},
                           {"failed", w.failed},
                           {"misses", w.misses},
                           {"cold_start_misses", w.coldMisses},
                           {"attainment", w.attainment()},
                           {"ttft_p99_s", finite(w.ttftP99S)},
                           {"tpot_p99_s", finite(w.tpotP99S)},
                           {"p99_s", finite(w.p99S)},
                           {"mean_replicas", w.meanReplicas},
                           {"met", w.met}});
    nlohmann::json doc{{"policy", run.policy},
                       {"requests", run.requests},
                       {"good", run.good},
                       {"misses", run.misses},
                       {"cold_start_misses", run.coldMisses},
                       {"windows_met", run.windowsMet},
                       {"windows", windows},
                       {"windows_met_share", run.windowsMetShare()},
                       {"scale_ups", run.scaleUps},
                       {"scale_downs", run.scaleDowns},
                       {"replica_hours", run.replicaHours},
                       {"cost", run.cost},
                       {"peak_replicas", run.peakReplicas},
                       {"span_s", run.spanS},
                       {"wall_s", run.wallSeconds},
                       {"steps", run.steps},
                       {"coalesced_steps", run.coalescedSteps}};
    if (withTimeline) {
        nlohmann::json t = nlohmann::json::array();
        for (const ReplicaPoint &p : run.timeline)
            t.push_back({p.atS, p.ready, p.starting, p.draining, p.wanted});
        doc["timeline_columns"] = {"at_s", "ready", "starting", "draining", "wanted"};
        doc["timeline"] = std::move(t);
    }
    return doc;
}

nlohmann::json autoscaleKnobsJson(const AutoscaleKnobs &knobs)
{
    const auto bounds = [](const ScaleBounds &b) { return nlohmann::json{b.minReplicas, b.maxReplicas}; };
    if (const auto *r = std::get_if<ReactiveKnobs>(&knobs))
        return {{"policy", "reactive"},         {"metric", std::string(scaleMetricName(r->metric))},
                {"target", r->target},          {"tolerance", r->tolerance},
                {"up_window_s", r->upWindowS},  {"down_window_s", r->downWindowS},
                {"replicas", bounds(r->bounds)}};
    if (const auto *s = std::get_if<ScheduledKnobs>(&knobs))
        return {{"policy", "scheduled"},
                {"schedule", s->replicas},
                {"slot_s", s->slotS},
                {"lead_s", s->leadS},
                {"replicas", bounds(s->bounds)}};
    const auto &p = std::get<PredictiveKnobs>(knobs);
    return {{"policy", "predictive"},
            {"forecaster", "holt"},
            {"replica_rate", p.replicaRate},
            {"alpha", p.alpha},
            {"beta", p.beta},
            {"horizon_s", p.horizonS},
            {"headroom", p.headroom},
            {"down_window_s", p.downWindowS},
            {"replicas", bounds(p.bounds)}};
}

} // namespace bp
