// batchpilot autoscale --trace ID --slo SPEC: an autoscaler policy replayed
// over an imported trace on a simulated fleet (engine/sim/fleet/autoscale_sim.h),
// against the static plan and a fixed fleet, and optionally a search for
// the cheapest policy that meets the SLO. docs/capacity.md, "Autoscaling
// over a trace", describes it.
#include "cli_text.h"
#include "cmd_autoscale.h"
#include "cmd_calibrate.h"
#include "engine_host.h"
#include "sigint_flag.h"

#include "command_args.h"
#include "commands.h"

#include "engine/core/span_text.h"
#include "engine/sim/fleet/autoscale_sim.h"
#include "engine/sim/tune/tune_pipeline.h"
#include "engine/store/fleet_store.h"
#include "engine/store/trace_store.h"

#include <QTextStream>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

namespace bp::app {

namespace {

int fail(const QString &message, int code = 1)
{
    return failCommand(QStringLiteral("autoscale"), message, code);
}

Status invalid(const QString &why)
{
    return Status(StatusCode::InvalidArgument, why.toStdString());
}

QString megabytes(double bytes)
{
    return bytes >= 1e9 ? QStringLiteral("%1 GB").arg(bytes / 1e9, 0, 'f', 2)
                        : QStringLiteral("%1 MB").arg(bytes / 1e6, 0, 'f', 1);
}

// The cold start and where it came from (said in the output and the document).
struct ColdStart {
    double seconds = 0;
    std::string from;
};

Result<ColdStart> coldStartFor(CommandArgs &args, const Calibration &calibration)
{
    if (args.has("cold-start")) {
        const auto s = optionSeconds(args, "cold-start", 0, 86400);
        if (!s)
            return invalid(QStringLiteral("--cold-start is 0 or a length up to 1d (90s, 3m), not '%1'")
                               .arg(args.value("cold-start")));
        return ColdStart{*s, "--cold-start"};
    }
    const auto warmup = optionSeconds(args, "warmup", 30, 86400);
    const auto bandwidth = args.number("load-bandwidth", 1e9, 1e3, 1e13);
    const auto given = args.number("model-bytes", 0, 0, 1e15);
    if (!warmup)
        return invalid(
            QStringLiteral("--warmup is 0 or a length (30s, 2m), not '%1'").arg(args.value("warmup")));
    if (!bandwidth || !given)
        return invalid(args.error());
    const double bytes = args.has("model-bytes") ? *given : double(calibration.weightBytes());
    const QString warm = QStringLiteral("%1 s warm-up").arg(*warmup, 0, 'g', 4);
    if (bytes <= 0)
        return ColdStart{*warmup,
                         (warm + QStringLiteral(" only: the model's size is unknown to calibration %1 "
                                                "(give --model-bytes N or --cold-start LEN)")
                                     .arg(calibration.id))
                             .toStdString()};
    const QString whose = args.has("model-bytes")
                              ? QStringLiteral("--model-bytes")
                              : QStringLiteral("the calibrated model's %1 M %2 parameters")
                                    .arg(double(calibration.parameters) / 1e6, 0, 'f', 1)
                                    .arg(q(calibration.dtype));
    return ColdStart{bytes / *bandwidth + *warmup,
                     QStringLiteral("%1 (%2) at %3/s + %4")
                         .arg(megabytes(bytes), whose, megabytes(*bandwidth), warm)
                         .toStdString()};
}

// The static plan the run is compared with: its replicas per window in
// serving time, read from a plan document (stored, or made here).
struct PlanLine {
    std::optional<std::int64_t> id;
    double windowS = 0; // serving time
    std::vector<int> replicas;
    double replicaHours = 0, cost = 0;
    int peak = 0;
};

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

nlohmann::json planJson(const PlanLine &p)
{
    return {{"id", p.id ? nlohmann::json(*p.id) : nlohmann::json()},
            {"window_s", p.windowS},
            {"replicas", p.replicas},
            {"replica_hours", p.replicaHours},
            {"cost", p.cost},
            {"peak_replicas", p.peak}};
}

struct Setup {
    std::int64_t traceId = 0;
    double rateScale = 1;
    TuneSlo slo;
    Calibration calibration;
    SimulatorOptions model;
    CostNoise noise = CostNoise::Drawn;
    AutoscaleSimRequest request;
    ColdStart cold;
    int jobs = 1;
};

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

QString percent(double share)
{
    return QStringLiteral("%1%").arg(100 * share, 0, 'f', share > 0.999 && share < 1 ? 2 : 1);
}

QString clock(double seconds)
{
    const auto s = std::int64_t(seconds);
    return QStringLiteral("%1:%2:%3")
        .arg(s / 3600, 2, 10, QChar('0'))
        .arg(s % 3600 / 60, 2, 10, QChar('0'))
        .arg(s % 60, 2, 10, QChar('0'));
}

void printRun(QTextStream &out, const AutoscaleRun &run, const Setup &s, const std::optional<PlanLine> &plan)
{
    out << QStringLiteral("autoscale: %1 over trace %2 at %3x, %4 (calibration %5: %6)\n")
               .arg(q(run.policy))
               .arg(s.traceId)
               .arg(s.rateScale)
               .arg(q(describe(s.slo)))
               .arg(s.calibration.id)
               .arg(q(s.calibration.describe()));
    out << QStringLiteral("  each replica: %1; router %2; a decision every %3 s; cold start %4 s (%5)\n")
               .arg(q(candidateLabel(s.request.config)))
               .arg(q(std::string(routerPolicyName(s.request.router))))
               .arg(s.request.periodS)
               .arg(s.cold.seconds, 0, 'f', 1)
               .arg(q(s.cold.from));
    out << QStringLiteral("  %1 requests over %2 of serving time, simulated in %3 s (%4 steps, %5% of them "
                          "in decode runs)\n")
               .arg(run.requests)
               .arg(clock(run.spanS))
               .arg(run.wallSeconds, 0, 'f', 1)
               .arg(run.steps)
               .arg(run.steps ? 100.0 * double(run.coalescedSteps) / double(run.steps) : 0.0, 0, 'f', 1);
    // The windows that missed, and a replica line every hour of serving time,
    // with the p99 the SLO bounds first (TTFT, else TPOT, else end to end).
    struct Judged {
        std::string name;
        double AutoscaleWindow::*field;
        double of(const AutoscaleWindow &w) const { return w.*field; }
    };
    const Judged judged = s.slo.ttftP99 > Duration::zero() ? Judged{"ttft p99 s", &AutoscaleWindow::ttftP99S}
                          : s.slo.tpotP99 > Duration::zero()
                              ? Judged{"tpot p99 s", &AutoscaleWindow::tpotP99S}
                              : Judged{"p99 s", &AutoscaleWindow::p99S};
    out << QStringLiteral("%1 %2 %3 %4 %5 %6 %7\n")
               .arg(QStringLiteral("window"), -9)
               .arg(QStringLiteral("requests"), 9)
               .arg(QStringLiteral("replicas"), 9)
               .arg(q(judged.name), 12)
               .arg(QStringLiteral("attained"), 9)
               .arg(QStringLiteral("misses"), 7)
               .arg(QStringLiteral("cold"), 6);
    std::size_t shown = 0;
    const std::size_t perHour = std::max<std::size_t>(1, std::size_t(std::lround(3600 / s.request.windowS)));
    for (std::size_t i = 0; i < run.windows.size(); ++i) {
        const AutoscaleWindow &w = run.windows[i];
        if (w.met && i % perHour != 0)
            continue;
        if (!w.met && ++shown > 40) {
            if (shown == 41)
                out << "  ... (more windows missed: --json lists them all)\n";
            continue;
        }
        out << QStringLiteral("%1 %2 %3 %4 %5 %6 %7%8\n")
                   .arg(clock(w.beginS), -9)
                   .arg(w.requests, 9)
                   .arg(w.meanReplicas, 9, 'f', 2)
                   .arg(std::isfinite(judged.of(w)) ? QString::number(judged.of(w), 'f', 3)
                                                    : QStringLiteral("failed"),
                        12)
                   .arg(percent(w.attainment()), 9)
                   .arg(w.misses, 7)
                   .arg(w.coldMisses, 6)
                   .arg(w.met ? QString() : QStringLiteral("  missed the SLO"));
    }
    out << QStringLiteral(
               "SLO met in %1 of %2 windows (%3); %4 of %5 requests missed a bound, %6 of them during "
               "a cold start\n")
               .arg(run.windowsMet)
               .arg(run.windows.size())
               .arg(percent(run.windowsMetShare()))
               .arg(run.misses)
               .arg(run.requests)
               .arg(run.coldMisses);
    out << QStringLiteral("replicas: peak %1; %2 asked for, %3 drained or cancelled; %4 replica-hours")
               .arg(run.peakReplicas)
               .arg(run.scaleUps)
               .arg(run.scaleDowns)
               .arg(run.replicaHours, 0, 'f', 2);
    if (s.request.replicaCostPerHour > 0)
        out << QStringLiteral(", cost %1").arg(run.cost, 0, 'f', 2);
    out << "\n";
    if (plan) {
        const double fixedHours = plan->peak * run.spanS / 3600;
        out << QStringLiteral(
                   "against the static plan%1 (%2 s windows, set by hand ahead): %3 replica-hours, "
                   "peak %4; a fixed fleet of %4 (the plan's peak): %5 replica-hours\n")
                   .arg(plan->id ? QStringLiteral(" %1").arg(*plan->id) : QString())
                   .arg(plan->windowS, 0, 'g', 4)
                   .arg(plan->replicaHours, 0, 'f', 2)
                   .arg(plan->peak)
                   .arg(fixedHours, 0, 'f', 2);
        if (plan->replicaHours > 0 && fixedHours > 0)
            out << QStringLiteral("  this policy costs %1 of the plan's and %2 of the fixed fleet's\n")
                       .arg(percent(run.replicaHours / plan->replicaHours))
                       .arg(percent(run.replicaHours / fixedHours));
    }
    if (run.cancelled)
        out << "cancelled before the end of the trace: no window was judged\n";
}

} // namespace

int runAutoscaleTrace(const AppOptions &options, CommandArgs &args)
{
    QTextStream out(stdout), err(stderr);
    Setup s;
    const auto trace = args.number("trace", 0, 1, 9e18);
    const auto rate = args.number("rate-scale", 1, 1e-3, 1e5);
    const auto cost = args.number("replica-cost", 0, 0, 1e9);
    const auto queue = args.number("router-queue", 0, 0, 1e6);
    const auto initial = args.number("initial", 0, 0, 10000);
    const auto share = args.number("required-share", 0.99, 0, 1);
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const auto jobs = args.number("jobs", std::min(cores, 16), 1, 16);
    if (!trace || !rate || !cost || !queue || !initial || !share || !jobs)
        return fail(args.error(), 2);
    if (!args.has("slo"))
        return fail(
            QStringLiteral("--trace needs --slo, e.g. --slo 'p99<=2s' or 'ttft_p99<=2s,tpot_p99<=200ms'"), 2);
    auto slo = parseTuneSlo(args.value("slo").toStdString());
    if (!slo)
        return fail(q(slo.status().message()), 2);
    const auto window = optionSeconds(args, "window", 300, 86400);
    const auto period = optionSeconds(args, "period", 15, 3600);
    if (!window || *window < 1)
        return fail(
            QStringLiteral("--window is a length from 1s to 1d (5m, 1h), not '%1'").arg(args.value("window")),
            2);
    if (!period || *period < 0.1)
        return fail(QStringLiteral("--period is a length from 100ms to 1h (15s, 1m)"), 2);
    const auto router =
        parseRouterPolicy(args.value("router", QStringLiteral("least-outstanding")).toStdString());
    if (!router)
        return fail(QStringLiteral(
                        "--router is round-robin, least-outstanding, least-kv or prefix-affinity, not '%1'")
                        .arg(args.value("router")),
                    2);
    auto noise = costNoiseFor(args);
    if (!noise)
        return fail(q(noise.status().message()), 2);
    const bool scheduleFromThePlan =
        args.value("policy") == QLatin1String("scheduled") && !args.has("schedule");
    if (scheduleFromThePlan && args.has("no-compare"))
        return fail(QStringLiteral("--policy scheduled over a trace follows the plan (--plan ID, or one made "
                                   "here) or a --schedule: --no-compare leaves it neither"),
                    2);
    if (scheduleFromThePlan && args.has("search"))
        return fail(QStringLiteral("--search over a plan's schedule searches only its lead: give --schedule"),
                    2);
    std::optional<AutoscaleKnobs> knobs;
    if (!scheduleFromThePlan) {
        auto k = autoscaleKnobsFromArgs(args);
        if (!k)
            return fail(q(k.status().message()), 2);
        knobs = *k;
    }

    auto opened = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!opened)
        return fail(q(opened.status().message()));
    const std::shared_ptr<TraceStore> store = std::move(*opened);
    s.traceId = std::int64_t(*trace);
    if (auto t = store->trace(s.traceId); !t)
        return fail(q(t.status().message()));
    auto calibration = calibrationFor(*store, options, args);
    if (!calibration)
        return fail(
            q(calibration.status().message()) +
            QStringLiteral("\n(a calibration is the cost model of a replica: batchpilot calibrate --model "
                           "M [--preset P] --quick)"));
    s.calibration = *calibration;
    BatchingConfig config; // as `plan` runs each replica without --config
    if (!options.config.isEmpty()) {
        auto loaded = batchingConfigFor(options);
        if (!loaded)
            return fail(q(loaded.status().message()), 2);
        config = *loaded;
    }
    auto replicaConfig = simulatedReplicaConfig(options, s.calibration, config, [&](const std::string &line) {
        err << "autoscale: " << q(line) << "\n";
    });
    if (!replicaConfig)
        return fail(q(replicaConfig.status().message()), 2);
    auto cold = coldStartFor(args, s.calibration);
    if (!cold)
        return fail(q(cold.status().message()), 2);
    s.cold = *cold;
    s.slo = *slo;
    s.rateScale = *rate;
    s.noise = *noise;
    s.jobs = int(*jobs);
    s.model = simulatorOptionsFor(s.calibration, s.noise);
    s.request.slo = s.slo;
    s.request.config = *replicaConfig;
    s.request.router = *router;
    s.request.routerQueueLimit = int(*queue);
    s.request.periodS = *period;
    s.request.coldStartS = s.cold.seconds;
    s.request.windowS = *window;
    s.request.initialReplicas = int(*initial);
    s.request.replicaCostPerHour = *cost;

    SigintFlag sigint;
    s.request.cancel = sigint.flag();
    err << QStringLiteral("autoscale: reading trace %1 (a week of ~2.3 M rows takes ~10 s and ~300 MB)\n")
               .arg(s.traceId);
    err.flush();
    auto arrivals = loadAutoscaleArrivals(*store, s.traceId, s.rateScale, s.model);
    if (!arrivals)
        return fail(q(arrivals.status().message()));
    err << QStringLiteral(
               "autoscale: %1 requests over %2 of serving time (%3x the trace's rate); cold start %4 s "
               "(%5)\n")
               .arg(arrivals->arrivals.size())
               .arg(clock(arrivals->spanS))
               .arg(s.rateScale)
               .arg(s.cold.seconds, 0, 'f', 1)
               .arg(q(s.cold.from));
    err.flush();

    auto plan = comparePlan(args, *store, s, sigint.flag(), err);
    if (!plan)
        return fail(q(plan.status().message()), plan.status().message() == "cancelled" ? 130 : 1);
    if (scheduleFromThePlan) {
        auto k = scheduleFromPlan(args, **plan, s.cold.seconds);
        if (!k)
            return fail(q(k.status().message()), 2);
        knobs = *k;
    }

    nlohmann::json doc{
        {"trace", s.traceId},
        {"rate_scale", s.rateScale},
        {"slo", describe(s.slo)},
        {"calibration",
         {{"id", s.calibration.id}, {"model", s.calibration.model}, {"describe", s.calibration.describe()}}},
        {"config", candidateLabel(s.request.config)},
        {"router", std::string(routerPolicyName(s.request.router))},
        {"noise", std::string(costNoiseName(s.noise))},
        {"period_s", s.request.periodS},
        {"window_s", s.request.windowS},
        {"cold_start_s", s.cold.seconds},
        {"cold_start_from", s.cold.from},
        {"replica_cost_per_hour", s.request.replicaCostPerHour}};
    AutoscaleRun run;
    bool searchCancelled = false; // Ctrl-C in a search: the best of the runs that ended
    if (args.has("search")) {
        AutoscaleSearch search;
        search.requiredShare = *share;
        search.threads = s.jobs;
        search.progress = [&](std::size_t runs, const AutoscaleRun &last) {
            const QString verdict =
                last.cancelled   ? QStringLiteral("cancelled")
                : last.missedOut ? QStringLiteral("stopped: missed more windows than the share allows")
                : last.stopped   ? QStringLiteral("stopped: dearer than the best so far")
                                 : QStringLiteral("%1 windows met").arg(percent(last.windowsMetShare()));
            err << QStringLiteral("autoscale --search: run %1: %2 -> %3, %4 replica-hours billed, %5 s\n")
                       .arg(runs)
                       .arg(q(last.policy))
                       .arg(verdict)
                       .arg(last.replicaHours, 0, 'f', 2)
                       .arg(last.wallSeconds, 0, 'f', 1);
            err.flush();
        };
        err << QStringLiteral(
                   "autoscale --search: the cheapest %1 policy meeting the SLO in %2 of the windows, "
                   "%3 runs at a time; each run one replay of the trace\n")
                   .arg(q(autoscaleKnobsJson(*knobs)["policy"].get<std::string>()))
                   .arg(percent(*share))
                   .arg(s.jobs);
        err.flush();
        AutoscaleSearchResult found = searchAutoscale(s.model, arrivals->arrivals, s.request, *knobs, search);
        nlohmann::json tried = nlohmann::json::array();
        for (const auto &[k, r] : found.tried) {
            nlohmann::json t = autoscaleRunJson(r, false);
            t.erase("windows");
            t["knobs"] = autoscaleKnobsJson(k);
            t["stopped"] = r.stopped; // cut short: its windows were not judged
            if (r.stopped) {
                t["stopped_why"] = r.missedOut ? "missed" : "dearer";
                t["windows_met_share"] = nullptr;
            }
            tried.push_back(std::move(t));
        }
        doc["search"] = {{"required_share", *share},
                         {"runs", found.runs},
                         {"wall_s", found.wallSeconds},
                         {"met", found.best.has_value()},
                         {"cancelled", found.cancelled},
                         {"start", autoscaleKnobsJson(*knobs)},
                         {"tried", tried}};
        QTextStream &said = args.has("json") ? err : out; // --json: stdout holds the document alone
        said << QStringLiteral("search: %1 runs in %2 s (calibration %3, %4; each replica %5)\n")
                    .arg(found.runs)
                    .arg(found.wallSeconds, 0, 'f', 1)
                    .arg(s.calibration.id)
                    .arg(q(s.calibration.describe()))
                    .arg(q(candidateLabel(s.request.config)));
        searchCancelled = found.cancelled;
        if (!found.best && found.cancelled)
            return fail(QStringLiteral("cancelled: no run that ended met the SLO"), 130);
        if (!found.best) {
            said << QStringLiteral(
                        "search: no policy tried met the SLO in %1 of the windows (raise --max, lower "
                        "the cold start, or relax the SLO); the start's run follows\n")
                        .arg(percent(*share));
            run = simulateAutoscale(s.model, arrivals->arrivals, s.request, *knobs);
        } else {
            knobs = *found.best;
            run = std::move(found.bestRun);
            said << QStringLiteral("search: the cheapest that met: %1\n").arg(q(run.policy));
        }
    } else {
        std::size_t shown = 0;
        s.request.progress = [&](std::size_t done, std::size_t total) {
            const std::size_t tenth = done * 10 / std::max<std::size_t>(total, 1);
            if (tenth > shown) {
                shown = tenth;
                err << QStringLiteral("autoscale: %1/%2 requests in\n").arg(done).arg(total);
                err.flush();
            }
        };
        run = simulateAutoscale(s.model, arrivals->arrivals, s.request, *knobs);
    }
    if (!run.status)
        return fail(q(run.status.message()));
    doc["knobs"] = autoscaleKnobsJson(*knobs);
    doc["run"] = autoscaleRunJson(run);
    if (*plan) {
        doc["plan"] = planJson(**plan);
        const double fixedHours = (*plan)->peak * run.spanS / 3600;
        doc["fixed"] = {{"replicas", (*plan)->peak},
                        {"replica_hours", fixedHours},
                        {"cost", fixedHours * s.request.replicaCostPerHour}};
    }
    if (!args.has("no-store") && !run.cancelled && !searchCancelled) {
        StoredAutoscaleRun stored;
        stored.sourceTraceId = s.traceId;
        stored.calibrationId = s.calibration.id;
        stored.slo = describe(s.slo);
        stored.policy = run.policy;
        stored.result = doc;
        auto id = saveAutoscaleRun(*store, stored);
        if (!id)
            return fail(q(id.status().message()));
        doc["autoscale_run_id"] = *id;
    }
    if (args.has("json")) {
        out << q(doc.dump(2)) << "\n";
    } else {
        printRun(out, run, s, *plan);
        if (doc.contains("autoscale_run_id"))
            out << QStringLiteral("stored as autoscale run %1 (the console's Fleet view shows it)\n")
                       .arg(doc["autoscale_run_id"].get<std::int64_t>());
    }
    if (searchCancelled)
        err << "autoscale --search: cancelled: the best of the runs that ended is shown\n";
    return run.cancelled || searchCancelled ? 130 : 0;
}

} // namespace bp::app
