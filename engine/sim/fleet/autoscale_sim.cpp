#include "engine/sim/fleet/autoscale_sim.h"

#include "engine/sim/fleet/autoscale_windows.h"

#include "engine/store/trace_store.h"

#include <algorithm>
#include <cmath>

namespace bp {

using autoscale::Ended;
using autoscale::MissedWindows;
using autoscale::ScaleLog;

namespace {

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

// The fleet a run simulates: `model` with the request's config, router and
// `replicas` at the start; no session, samples or observer; stopped by
// `stop`; decode runs coalesced (a week is ~10^8 steps: simulator.h).
SimulatorOptions fleetOptions(const SimulatorOptions &model, const AutoscaleSimRequest &r, int replicas,
                              const std::atomic<bool> &stop)
{
    SimulatorOptions so = model;
    so.config = r.config;
    so.replicas = replicas;
    so.router.policy = r.router;
    so.routerQueueLimit = r.routerQueueLimit;
    so.observer = nullptr;
    so.onSample = nullptr;
    so.samplePeriod = Duration::zero();
    so.cancel = &stop;
    so.coalesceDecodeRuns = true;
    return so;
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
    std::atomic<bool> stop{false};
    SimulatorOptions so = fleetOptions(model, r, initialReplicas(knobs, r), stop);
    ScaleLog log(run, so.replicas);

    FleetScaling scaling;
    scaling.period = fromSeconds(r.periodS);
    scaling.coldStart = fromSeconds(std::max(0.0, r.coldStartS));
    scaling.maxReplicas = maxReplicas(knobs);
    scaling.decide = [&policy](const FleetObservation &o) { return policy->decide(o).replicas; };
    scaling.onDecision = [&](const FleetObservation &o, int wanted) {
        const ReplicaPoint p{o.atS, o.ready, o.starting, log.draining, wanted};
        const ReplicaPoint *prev = run.timeline.empty() ? nullptr : &run.timeline.back();
        if (!prev || prev->ready != p.ready || prev->starting != p.starting || prev->draining != p.draining ||
            prev->wanted != p.wanted)
            run.timeline.push_back(p);
        log.billing.at(o.atS, 0);
        if ((r.cancel && r.cancel->load(std::memory_order_relaxed)) ||
            (r.stopAboveReplicaHours > 0 && log.billing.seconds / 3600.0 > r.stopAboveReplicaHours))
            stop.store(true, std::memory_order_relaxed);
    };
    scaling.onEvent = [&log](const ScaleEvent &e) { log.onEvent(e); };
    so.scaling = std::move(scaling);
    const TimePoint start = so.start;
    MissedWindows missed(r, arrivals, stop);
    so.onResponse = [&ended, start, &missed](std::size_t index, TimePoint arrival, const Response &resp) {
        Ended &e = ended[index];
        e.arrivalS = toSeconds(arrival - start);
        e.ok = resp.status.isOk();
        e.unservable = resp.status.code() == StatusCode::OutOfRange;
        e.ttftS = float(toSeconds(resp.timing.timeToFirstToken));
        e.tpotS = float(toSeconds(resp.timing.timePerOutputToken));
        e.totalS = float(toSeconds(resp.timing.total));
        if (e.ok && resp.timing.timeToFirstToken <= Duration::zero())
            e.ttftS = e.totalS; // a request-level model's first token is its answer
        missed.count(e);
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
    run.missedOut = run.stopped && missed.missedOut();
    run.replicaHours = out.replicaSeconds / 3600.0;
    run.cost = run.replicaHours * r.replicaCostPerHour;
    run.peakReplicas = out.peakReplicas;
    run.steps = out.batches;
    run.coalescedSteps = out.coalescedSteps;
    run.spanS = toSeconds(out.end - start);
    if (!arrivals.empty())
        run.spanS = std::max(run.spanS, toSeconds(arrivals.back().offset));
    if (out.status && !out.cancelled)
        judgeWindows(run, ended, log.cold, log.billing, r);
    run.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    return run;
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
