// batchpilot autoscale --trace ID --slo SPEC: an autoscaler policy replayed
// over an imported trace on a simulated fleet (engine/sim/fleet/autoscale_sim.h),
// against the static plan and a fixed fleet, and optionally a search for
// the cheapest policy that meets the SLO. docs/capacity.md, "Autoscaling
// over a trace", describes it.
#include "autoscale_trace.h"
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

using namespace autoscale_trace;

namespace {

int fail(const QString &message, int code = 1)
{
    return failCommand(QStringLiteral("autoscale"), message, code);
}

Status invalid(const QString &why)
{
    return Status(StatusCode::InvalidArgument, why.toStdString());
}

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

constexpr int kGoOn = -1;

// The flags checked before the store is opened.
struct TraceFlags {
    double trace = 0, rate = 1, cost = 0, queue = 0, initial = 0, share = 0.99, window = 300, period = 15;
    int jobs = 1;
    TuneSlo slo;
    RouterPolicy router{};
    CostNoise noise = CostNoise::Drawn;
    bool scheduleFromThePlan = false;
    std::optional<AutoscaleKnobs> knobs; // none while the plan's schedule is to come
};

int parseNumbers(CommandArgs &args, TraceFlags &f)
{
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
    f.trace = *trace;
    f.rate = *rate;
    f.cost = *cost;
    f.queue = *queue;
    f.initial = *initial;
    f.share = *share;
    f.jobs = int(*jobs);
    if (!args.has("slo"))
        return fail(
            QStringLiteral("--trace needs --slo, e.g. --slo 'p99<=2s' or 'ttft_p99<=2s,tpot_p99<=200ms'"), 2);
    auto slo = parseTuneSlo(args.value("slo").toStdString());
    if (!slo)
        return fail(q(slo.status().message()), 2);
    f.slo = *slo;
    return kGoOn;
}

int parseFlags(CommandArgs &args, TraceFlags &f)
{
    if (const int code = parseNumbers(args, f); code != kGoOn)
        return code;
    const auto window = optionSeconds(args, "window", 300, 86400);
    const auto period = optionSeconds(args, "period", 15, 3600);
    if (!window || *window < 1)
        return fail(
            QStringLiteral("--window is a length from 1s to 1d (5m, 1h), not '%1'").arg(args.value("window")),
            2);
    if (!period || *period < 0.1)
        return fail(QStringLiteral("--period is a length from 100ms to 1h (15s, 1m)"), 2);
    f.window = *window;
    f.period = *period;
    const auto router =
        parseRouterPolicy(args.value("router", QStringLiteral("least-outstanding")).toStdString());
    if (!router)
        return fail(QStringLiteral(
                        "--router is round-robin, least-outstanding, least-kv or prefix-affinity, not '%1'")
                        .arg(args.value("router")),
                    2);
    f.router = *router;
    auto noise = costNoiseFor(args);
    if (!noise)
        return fail(q(noise.status().message()), 2);
    f.noise = *noise;
    f.scheduleFromThePlan = args.value("policy") == QLatin1String("scheduled") && !args.has("schedule");
    if (f.scheduleFromThePlan && args.has("no-compare"))
        return fail(QStringLiteral("--policy scheduled over a trace follows the plan (--plan ID, or one made "
                                   "here) or a --schedule: --no-compare leaves it neither"),
                    2);
    if (f.scheduleFromThePlan && args.has("search"))
        return fail(QStringLiteral("--search over a plan's schedule searches only its lead: give --schedule"),
                    2);
    if (!f.scheduleFromThePlan) {
        auto k = autoscaleKnobsFromArgs(args);
        if (!k)
            return fail(q(k.status().message()), 2);
        f.knobs = *k;
    }
    return kGoOn;
}

// The fleet each run simulates: the calibration, each replica's config, the
// cold start and the request's knobs.
int setUp(const AppOptions &options, CommandArgs &args, const TraceFlags &f, TraceStore &store, Setup &s)
{
    s.traceId = std::int64_t(f.trace);
    if (auto t = store.trace(s.traceId); !t)
        return fail(q(t.status().message()));
    auto calibration = calibrationFor(store, options, args);
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
    auto replicaConfig = simulatedReplicaConfig(options, s.calibration, config, [](const std::string &line) {
        QTextStream(stderr) << "autoscale: " << q(line) << "\n";
    });
    if (!replicaConfig)
        return fail(q(replicaConfig.status().message()), 2);
    auto cold = coldStartFor(args, s.calibration);
    if (!cold)
        return fail(q(cold.status().message()), 2);
    s.cold = *cold;
    s.slo = f.slo;
    s.rateScale = f.rate;
    s.noise = f.noise;
    s.jobs = f.jobs;
    s.model = simulatorOptionsFor(s.calibration, s.noise);
    s.request.slo = s.slo;
    s.request.config = *replicaConfig;
    s.request.router = f.router;
    s.request.routerQueueLimit = int(f.queue);
    s.request.periodS = f.period;
    s.request.coldStartS = s.cold.seconds;
    s.request.windowS = f.window;
    s.request.initialReplicas = int(f.initial);
    s.request.replicaCostPerHour = f.cost;
    return kGoOn;
}

Result<AutoscaleArrivals> readArrivals(TraceStore &store, const Setup &s, QTextStream &err)
{
    err << QStringLiteral("autoscale: reading trace %1 (a week of ~2.3 M rows takes ~10 s and ~300 MB)\n")
               .arg(s.traceId);
    err.flush();
    auto arrivals = loadAutoscaleArrivals(store, s.traceId, s.rateScale, s.model);
    if (!arrivals)
        return arrivals.status();
    err << QStringLiteral(
               "autoscale: %1 requests over %2 of serving time (%3x the trace's rate); cold start %4 s "
               "(%5)\n")
               .arg(arrivals->arrivals.size())
               .arg(clock(arrivals->spanS))
               .arg(s.rateScale)
               .arg(s.cold.seconds, 0, 'f', 1)
               .arg(q(s.cold.from));
    err.flush();
    return arrivals;
}

nlohmann::json runDocument(const Setup &s)
{
    return {
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
}

// One line per search run as it ends, on stderr.
void reportSearchRun(QTextStream &err, std::size_t runs, const AutoscaleRun &last)
{
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
}

nlohmann::json searchJson(const AutoscaleSearchResult &found, const AutoscaleKnobs &start, double share)
{
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
    return {{"required_share", share},
            {"runs", found.runs},
            {"wall_s", found.wallSeconds},
            {"met", found.best.has_value()},
            {"cancelled", found.cancelled},
            {"start", autoscaleKnobsJson(start)},
            {"tried", tried}};
}

// What a run came to: the run shown, and whether a search was cut short
// (Ctrl-C: the best of the runs that ended).
struct RunResult {
    AutoscaleRun run;
    bool searchCancelled = false;
};

int search(CommandArgs &args, const Setup &s, const AutoscaleArrivals &arrivals, TraceFlags &f,
           nlohmann::json &doc, RunResult &result, QTextStream &out, QTextStream &err)
{
    AutoscaleSearch search;
    search.requiredShare = f.share;
    search.threads = s.jobs;
    search.progress = [&](std::size_t runs, const AutoscaleRun &last) { reportSearchRun(err, runs, last); };
    err << QStringLiteral("autoscale --search: the cheapest %1 policy meeting the SLO in %2 of the windows, "
                          "%3 runs at a time; each run one replay of the trace\n")
               .arg(q(autoscaleKnobsJson(*f.knobs)["policy"].get<std::string>()))
               .arg(percent(f.share))
               .arg(s.jobs);
    err.flush();
    AutoscaleSearchResult found = searchAutoscale(s.model, arrivals.arrivals, s.request, *f.knobs, search);
    doc["search"] = searchJson(found, *f.knobs, f.share);
    QTextStream &said = args.has("json") ? err : out; // --json: stdout holds the document alone
    said << QStringLiteral("search: %1 runs in %2 s (calibration %3, %4; each replica %5)\n")
                .arg(found.runs)
                .arg(found.wallSeconds, 0, 'f', 1)
                .arg(s.calibration.id)
                .arg(q(s.calibration.describe()))
                .arg(q(candidateLabel(s.request.config)));
    result.searchCancelled = found.cancelled;
    if (!found.best && found.cancelled)
        return fail(QStringLiteral("cancelled: no run that ended met the SLO"), 130);
    if (!found.best) {
        said << QStringLiteral("search: no policy tried met the SLO in %1 of the windows (raise --max, lower "
                               "the cold start, or relax the SLO); the start's run follows\n")
                    .arg(percent(f.share));
        result.run = simulateAutoscale(s.model, arrivals.arrivals, s.request, *f.knobs);
    } else {
        f.knobs = *found.best;
        result.run = std::move(found.bestRun);
        said << QStringLiteral("search: the cheapest that met: %1\n").arg(q(result.run.policy));
    }
    return kGoOn;
}

// One run of the policy, its progress every tenth of the requests.
AutoscaleRun simulateOnce(Setup &s, const AutoscaleArrivals &arrivals, const AutoscaleKnobs &knobs,
                          QTextStream &err)
{
    std::size_t shown = 0;
    s.request.progress = [&](std::size_t done, std::size_t total) {
        const std::size_t tenth = done * 10 / std::max<std::size_t>(total, 1);
        if (tenth > shown) {
            shown = tenth;
            err << QStringLiteral("autoscale: %1/%2 requests in\n").arg(done).arg(total);
            err.flush();
        }
    };
    return simulateAutoscale(s.model, arrivals.arrivals, s.request, knobs);
}

// The run, the plan and the fixed fleet in the document, stored unless
// --no-store or cut short.
int finishDocument(CommandArgs &args, TraceStore &store, const Setup &s, const AutoscaleKnobs &knobs,
                   const std::optional<PlanLine> &plan, const RunResult &r, nlohmann::json &doc)
{
    doc["knobs"] = autoscaleKnobsJson(knobs);
    doc["run"] = autoscaleRunJson(r.run);
    if (plan) {
        doc["plan"] = planJson(*plan);
        const double fixedHours = plan->peak * r.run.spanS / 3600;
        doc["fixed"] = {{"replicas", plan->peak},
                        {"replica_hours", fixedHours},
                        {"cost", fixedHours * s.request.replicaCostPerHour}};
    }
    if (args.has("no-store") || r.run.cancelled || r.searchCancelled)
        return kGoOn;
    StoredAutoscaleRun stored;
    stored.sourceTraceId = s.traceId;
    stored.calibrationId = s.calibration.id;
    stored.slo = describe(s.slo);
    stored.policy = r.run.policy;
    stored.result = doc;
    auto id = saveAutoscaleRun(store, stored);
    if (!id)
        return fail(q(id.status().message()));
    doc["autoscale_run_id"] = *id;
    return kGoOn;
}

} // namespace

int runAutoscaleTrace(const AppOptions &options, CommandArgs &args)
{
    TraceFlags f;
    if (const int code = parseFlags(args, f); code != kGoOn)
        return code;
    auto opened = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!opened)
        return fail(q(opened.status().message()));
    const std::shared_ptr<TraceStore> store = std::move(*opened);
    Setup s;
    if (const int code = setUp(options, args, f, *store, s); code != kGoOn)
        return code;
    SigintFlag sigint;
    s.request.cancel = sigint.flag();
    QTextStream out(stdout), err(stderr);
    auto arrivals = readArrivals(*store, s, err);
    if (!arrivals)
        return fail(q(arrivals.status().message()));
    auto plan = comparePlan(args, *store, s, sigint.flag(), err);
    if (!plan)
        return fail(q(plan.status().message()), plan.status().message() == "cancelled" ? 130 : 1);
    if (f.scheduleFromThePlan) {
        auto k = scheduleFromPlan(args, **plan, s.cold.seconds);
        if (!k)
            return fail(q(k.status().message()), 2);
        f.knobs = *k;
    }
    nlohmann::json doc = runDocument(s);
    RunResult r;
    if (args.has("search")) {
        if (const int code = search(args, s, *arrivals, f, doc, r, out, err); code != kGoOn)
            return code;
    } else {
        r.run = simulateOnce(s, *arrivals, *f.knobs, err);
    }
    if (!r.run.status)
        return fail(q(r.run.status.message()));
    if (const int code = finishDocument(args, *store, s, *f.knobs, *plan, r, doc); code != kGoOn)
        return code;
    if (args.has("json")) {
        out << q(doc.dump(2)) << "\n";
    } else {
        printRun(out, r.run, s, *plan);
        if (doc.contains("autoscale_run_id"))
            out << QStringLiteral("stored as autoscale run %1 (the console's Fleet view shows it)\n")
                       .arg(doc["autoscale_run_id"].get<std::int64_t>());
    }
    if (r.searchCancelled)
        err << "autoscale --search: cancelled: the best of the runs that ended is shown\n";
    return r.run.cancelled || r.searchCancelled ? 130 : 0;
}

} // namespace bp::app
