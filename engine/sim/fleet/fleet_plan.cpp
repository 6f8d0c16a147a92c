#include "engine/sim/fleet/fleet_plan.h"

#include "engine/core/length_rule.h"

#include "engine/sim/tune/tune_pipeline.h"

#include "engine/store/trace_store.h"

#include <algorithm>
#include <cmath>

namespace bp {

namespace {

PlanVerdict judge(const SimulatorOptions &model, const FleetPlanRequest &r,
                  std::span<const PlannedArrival> arrivals, double lengthS, int replicas, RouterPolicy router)
{
    PlanVerdict v;
    if (arrivals.empty()) {
        v.met = true;
        return v;
    }
    SimulatorOptions so = model;
    so.config = r.config;
    so.replicas = replicas;
    so.router.policy = router;
    so.routerQueueLimit = r.routerQueueLimit;
    const SimulatedSamples run = simulateSamples(std::move(so), arrivals);
    const TuneFigures f = figuresOf(run.samples, arrivals.size(), r.slo);
    v.met = f.sloMet;
    v.sloRatio = f.sloRatio;
    v.p99S = f.p99S;
    v.ttftP99S = f.ttftP99S;
    v.tpotP99S = f.tpotP99S;
    const double span = std::max(lengthS / r.rateScale, 1e-9);
    for (const ReplicaFigures &rf : run.outcome.replicas) {
        v.replicaBusy.push_back(rf.busyS / span);
        v.replicaRouted.push_back(rf.routed);
    }
    return v;
}

} // namespace

std::vector<PlannedArrival> traceArrivals(const std::vector<TraceRow> &rows,
                                          std::vector<PrefixBlocks> &&hashIds, int blockTokens, double beginS,
                                          double rateScale, const SimulatorOptions &model)
{
    std::vector<PlannedArrival> out;
    out.reserve(rows.size());
    // The one length rule (engine/core/length_rule.h), at scale 1.
    int maxLength = model.limits.maxSequenceLength;
    if (model.positions > 0)
        maxLength = maxLength > 0 ? std::min(maxLength, model.positions) : model.positions;
    const LengthLimits limits{.maxLength = maxLength, .generative = model.output == OutputKind::Generated};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        PlannedArrival a;
        a.offset = fromSeconds(std::max(0.0, rows[i].arrivalS - beginS) / rateScale);
        const ScaledLengths len = scaleLengths(rows[i].inputTokens, rows[i].outputTokens, 1.0, limits);
        a.inputTokens = len.input;
        a.maxNewTokens = len.output;
        a.id = i + 1;
        if (i < hashIds.size()) {
            a.blocks = std::move(hashIds[i]);
            a.blockTokens = blockTokens;
        }
        out.push_back(std::move(a));
    }
    return out;
}

Result<FleetPlan> planFleet(const TraceStore &store, const Calibration &calibration,
                            const FleetPlanRequest &request)
{
    if (!request.slo.any())
        return Status(StatusCode::InvalidArgument, "the plan needs an SLO with at least one bound");
    if (request.window <= Duration::zero() || !(request.rateScale > 0))
        return Status(StatusCode::InvalidArgument, "the window and the rate scale must be positive");
    const TimePoint wallStart = SteadyClock::now();
    const SimulatorOptions model = simulatorOptionsFor(calibration, request.noise, request.noiseSeed);
    const double windowS = toSeconds(request.window);

    // The windows: row ranges of a trace (streamed), or of a session's arrivals (in memory).
    std::vector<std::int64_t> starts;
    std::vector<TraceRow> sessionRows;
    int blockTokens = 0;
    if (request.source.kind == ReplaySource::Kind::Trace) {
        auto info = store.trace(request.source.id);
        if (!info)
            return info.status();
        blockTokens = info->blockTokens;
        auto s = store.traceWindowStarts(request.source.id, request.window);
        if (!s)
            return s.status();
        starts = std::move(*s);
    } else {
        auto rows = store.sessionArrivals(request.source.id);
        if (!rows)
            return rows.status();
        sessionRows = std::move(*rows);
        const Duration window = request.window;
        for (std::size_t i = 0; i < sessionRows.size(); ++i) {
            const auto k = std::size_t(fromSeconds(sessionRows[i].arrivalS) / window);
            while (starts.size() <= k)
                starts.push_back(std::int64_t(i));
        }
        starts.push_back(std::int64_t(sessionRows.size()));
    }
    if (starts.size() < 2 || starts.back() == 0)
        return Status(StatusCode::InvalidArgument, "the source has no requests to plan for");
    const std::size_t windows = starts.size() - 1;

    FleetPlan plan;
    plan.windows.resize(windows);
    auto factory = [&](std::size_t w) -> WindowJudge {
        std::vector<TraceRow> rows;
        std::vector<PrefixBlocks> hashIds;
        if (request.source.kind == ReplaySource::Kind::Trace) {
            if (Status s = store.traceSlice(request.source.id, starts[w], starts[w + 1], rows, hashIds); !s)
                return [s](int, RouterPolicy) -> PlanVerdict { return {}; }; // read error: never met
        } else {
            rows.assign(sessionRows.begin() + starts[w], sessionRows.begin() + starts[w + 1]);
        }
        const double beginS = double(w) * windowS;
        PlannedWindow &pw = plan.windows[w]; // this worker's own element
        pw.beginS = beginS;
        pw.lengthS = windowS;
        pw.requests = rows.size();
        for (const TraceRow &row : rows)
            pw.outputTokens += std::max(0, row.outputTokens);
        auto arrivals = std::make_shared<const std::vector<PlannedArrival>>(
            traceArrivals(rows, std::move(hashIds), blockTokens, beginS, request.rateScale, model));
        return [&model, &request, arrivals, windowS](int n, RouterPolicy r) {
            return judge(model, request, *arrivals, windowS, n, r);
        };
    };
    FleetSearchResult found = searchCapacity(windows, factory, request.search);
    plan.evaluations = found.evaluations;
    plan.cancelled = found.cancelled;

    const double hours = windowS / 3600.0 / request.rateScale; // real time a window takes at the scale
    double tokens = 0;
    for (std::size_t w = 0; w < windows; ++w) {
        PlannedWindow &pw = plan.windows[w];
        pw.choice = std::move(found.windows[w]);
        if (!pw.choice.done)
            continue;
        const int n = pw.choice.replicas > 0 ? pw.choice.replicas : request.search.maxReplicas;
        plan.anyUnmet = plan.anyUnmet || pw.choice.replicas == 0;
        plan.peakReplicas = std::max(plan.peakReplicas, n);
        plan.replicaHours += double(n) * hours;
        tokens += double(pw.outputTokens);
    }
    plan.cost = plan.replicaHours * request.replicaCostPerHour;
    plan.costPerMillionOutput = tokens > 0 ? plan.cost / (tokens / 1e6) : 0;
    const double day = 86400.0;
    if (std::fmod(day, windowS) == 0 && windowS < day && double(windows) * windowS >= day) {
        const auto slots = std::size_t(day / windowS);
        plan.daily.assign(slots, 0);
        for (const PlannedWindow &pw : plan.windows)
            if (pw.choice.done) {
                const int n = pw.choice.replicas > 0 ? pw.choice.replicas : request.search.maxReplicas;
                int &slot = plan.daily[std::size_t(std::llround(pw.beginS / windowS)) % slots];
                slot = std::max(slot, n);
            }
    }
    plan.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    return plan;
}

nlohmann::json planDocument(const FleetPlan &plan, const FleetPlanRequest &request,
                            const Calibration &calibration)
{
    using nlohmann::json;
    json routers = json::array();
    for (RouterPolicy r : request.search.routers)
        routers.push_back(routerPolicyName(r));
    json windows = json::array();
    for (const PlannedWindow &pw : plan.windows) {
        const WindowChoice &c = pw.choice;
        json w = {{"begin_s", pw.beginS},
                  {"length_s", pw.lengthS},
                  {"requests", pw.requests},
                  {"output_tokens", pw.outputTokens},
                  {"done", c.done}};
        if (c.done) {
            w["replicas"] = c.replicas; // 0: not met at max_replicas
            w["met"] = c.replicas > 0;
            w["router"] = routerPolicyName(c.router);
            w["slo_ratio"] = c.verdict.sloRatio;
            w["p99_s"] = c.verdict.p99S;
            if (c.verdict.ttftP99S > 0 || c.verdict.tpotP99S > 0) {
                w["ttft_p99_s"] = c.verdict.ttftP99S;
                w["tpot_p99_s"] = c.verdict.tpotP99S;
            }
            w["replica_busy"] = c.verdict.replicaBusy;
            w["replica_routed"] = c.verdict.replicaRouted;
            json each = json::object();
            for (const auto &[r, n] : c.routers)
                each[std::string(routerPolicyName(r))] = n;
            w["router_minimum"] = each;
            w["evaluations"] = c.evaluations;
        }
        windows.push_back(std::move(w));
    }
    json doc = {{"slo", describe(request.slo)},
                {"window_s", toSeconds(request.window)},
                {"rate_scale", request.rateScale},
                {"replicas_searched", {request.search.minReplicas, request.search.maxReplicas}},
                {"routers", routers},
                {"router_queue_limit", request.routerQueueLimit},
                {"config", candidateLabel(request.config)},
                {"calibration", {{"id", calibration.id}, {"model", calibration.model}}},
                {"windows", windows},
                {"daily_schedule", plan.daily},
                {"peak_replicas", plan.peakReplicas},
                {"replica_hours", plan.replicaHours},
                {"evaluations", plan.evaluations},
                {"cancelled", plan.cancelled},
                {"any_unmet", plan.anyUnmet},
                {"wall_s", plan.wallSeconds}};
    if (request.replicaCostPerHour > 0)
        doc["cost"] = {{"replica_per_hour", request.replicaCostPerHour},
                       {"total", plan.cost},
                       {"per_hour_peak", plan.peakReplicas * request.replicaCostPerHour},
                       {"per_million_output_tokens", plan.costPerMillionOutput}};
    return doc;
}

} // namespace bp
