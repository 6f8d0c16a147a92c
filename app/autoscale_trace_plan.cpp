// `batchpilot autoscale --trace`: the static plan it is compared with, read
// from a stored plan or made here, and a schedule taken from it.
#include "autoscale_trace.h"

#include "cli_text.h"
#include "cmd_autoscale.h"
#include "cmd_calibrate.h"

#include "engine/core/span_text.h"
#include "engine/sim/fleet/fleet_plan.h"
#include "engine/sim/tune/tune_pipeline.h"
#include "engine/store/fleet_store.h"
#include "engine/store/trace_store.h"

#include <cmath>

namespace bp::app::autoscale_trace {

namespace {

Status invalid(const QString &why)
{
    return Status(StatusCode::InvalidArgument, why.toStdString());
}

Result<PlanLine> planLineOf(const nlohmann::json &doc, std::optional<std::int64_t> id, double rateScale)
{
    try {
        const double planScale = doc.at("rate_scale").get<double>();
        if (std::abs(planScale - rateScale) > 1e-9 * rateScale)
            return invalid(
                QStringLiteral("plan %1 was made at %2x the trace's rate, this run is at %3x: give "
                               "the same --rate-scale")
                    .arg(id.value_or(0))
                    .arg(planScale)
                    .arg(rateScale));
        PlanLine p;
        p.id = id;
        p.windowS = doc.at("window_s").get<double>() / rateScale;
        const int most = doc.at("replicas_searched").at(1).get<int>();
        for (const auto &w : doc.at("windows"))
            p.replicas.push_back(w.value("replicas", 0) > 0 ? w["replicas"].get<int>() : most);
        p.replicaHours = doc.at("replica_hours").get<double>();
        p.peak = doc.at("peak_replicas").get<int>();
        if (doc.contains("cost"))
            p.cost = doc["cost"].value("total", 0.0);
        return p;
    } catch (const nlohmann::json::exception &e) {
        return invalid(
            QStringLiteral("plan %1 is not a plan document: %2").arg(id.value_or(0)).arg(e.what()));
    }
}

} // namespace

// The plan to compare with: --plan ID, or plan the trace here (hourly, as
// `plan` does by default). nullopt with --no-compare.
Result<std::optional<PlanLine>> comparePlan(CommandArgs &args, const TraceStore &store, const Setup &s,
                                            const std::atomic<bool> *cancel, QTextStream &err)
{
    if (args.has("no-compare"))
        return std::optional<PlanLine>();
    if (args.has("plan")) {
        const auto id = args.number("plan", 0, 1, 9e18);
        if (!id)
            return invalid(args.error());
        auto stored = capacityPlan(store, std::int64_t(*id));
        if (!stored)
            return stored.status();
        if (stored->sourceTraceId != s.traceId)
            return invalid(QStringLiteral("plan %1 was not made from trace %2").arg(*id).arg(s.traceId));
        auto line = planLineOf(stored->result, stored->id, s.rateScale);
        if (!line)
            return line.status();
        return std::optional<PlanLine>(*line);
    }
    FleetPlanRequest r;
    r.source = {ReplaySource::Kind::Trace, s.traceId};
    r.rateScale = s.rateScale;
    r.slo = s.slo;
    r.config = s.request.config;
    r.routerQueueLimit = s.request.routerQueueLimit;
    r.replicaCostPerHour = s.request.replicaCostPerHour;
    r.noise = s.noise;
    r.search.routers = {s.request.router};
    r.search.maxReplicas = 64;
    r.search.threads = s.jobs;
    r.search.cancel = cancel;
    std::size_t shown = 0;
    r.search.progress = [&](std::size_t done, std::size_t total) {
        if (done * 10 / std::max<std::size_t>(total, 1) > shown || done == total) {
            shown = done * 10 / std::max<std::size_t>(total, 1);
            err << QStringLiteral("autoscale: the static plan (to compare with): %1/%2 hour windows\n")
                       .arg(done)
                       .arg(total);
            err.flush();
        }
    };
    auto plan = planFleet(store, s.calibration, r);
    if (!plan)
        return plan.status();
    if (plan->cancelled)
        return Status(StatusCode::InvalidArgument, "cancelled");
    auto line = planLineOf(planDocument(*plan, r, s.calibration), std::nullopt, s.rateScale);
    if (!line)
        return line.status();
    return std::optional<PlanLine>(*line);
}

// --policy scheduled without --schedule: the plan's replicas per window,
// asked for a cold start ahead (--lead).
Result<AutoscaleKnobs> scheduleFromPlan(CommandArgs &args, const PlanLine &plan, double coldStartS)
{
    ScheduledKnobs k;
    k.replicas = plan.replicas;
    k.slotS = plan.windowS;
    const auto lead = optionSeconds(args, "lead", coldStartS, 86400);
    if (!lead)
        return invalid(QStringLiteral("--lead is 0 or a length (3m, 90s)"));
    k.leadS = *lead;
    if (Status s = validate(k); !s)
        return s;
    return AutoscaleKnobs(k);
}

} // namespace bp::app::autoscale_trace
