#include "cmd_plan.h"
#include "cli_text.h"
#include "sigint_flag.h"

#include "cmd_calibrate.h"
#include "command_args.h"
#include "commands.h"
#include "engine_host.h"
#include "simulation_args.h"

#include "engine/core/span_text.h"
#include "engine/sim/fleet/fleet_export.h"
#include "engine/sim/fleet/fleet_plan.h"
#include "engine/store/fleet_store.h"
#include "engine/store/trace_store.h"

#include <QTextStream>

#include <atomic>
#include <thread>

namespace bp::app {

namespace {

constexpr const char *kUsage =
    "usage: batchpilot plan (--trace ID | --session ID) --slo 'p99<=2s' [--replicas 1..N] "
    "[--router all|P[,P...]] [--window 1h] [--rate-scale K] [--replica-cost PER_HOUR] [--router-queue N] "
    "[--jobs N] [--calibration ID|FILE] [--noise none|mean|drawn] [--config FILE] [--export "
    "ray-serve|vllm|hpa|keda] "
    "[--no-store] [--json]";

int fail(const QString &message, int code = 1)
{
    return failCommand(QStringLiteral("plan"), message, code);
}

Result<FleetPlanRequest> parse(const AppOptions &options, CommandArgs &args)
{
    auto usage = [](const QString &why) {
        return Status(StatusCode::InvalidArgument, (why + "\n" + kUsage).toStdString());
    };
    auto slo = parseSourceAndSlo(
        args, kUsage,
        QStringLiteral("--slo is required, e.g. --slo 'p99<=2s' or 'ttft_p99<=500ms,tpot_p99<=50ms'"));
    if (!slo)
        return slo.status();
    FleetPlanRequest r;
    r.slo = *slo;
    const auto source = replaySourceFor(args);
    const auto rate = args.number("rate-scale", 1, 1e-3, 1e5);
    const auto cost = args.number("replica-cost", 0, 0, 1e9);
    const auto queue = args.number("router-queue", 0, 0, 1e6);
    const auto jobs = jobsFor(args);
    if (!source || !rate || !cost || !queue || !jobs)
        return Status(StatusCode::InvalidArgument, args.error().toStdString());
    r.source = *source;
    r.search.threads = *jobs;
    r.rateScale = *rate;
    r.replicaCostPerHour = *cost;
    r.routerQueueLimit = int(*queue);
    const QString range = args.value("replicas", QStringLiteral("1..16"));
    const QStringList ends = range.split(QStringLiteral(".."));
    bool okLo = false, okHi = false;
    const int lo = ends.front().toInt(&okLo), hi = ends.back().toInt(&okHi);
    if (ends.size() > 2 || !okLo || !okHi || lo < 1 || hi < lo || hi > 1024)
        return usage(QStringLiteral("--replicas must be N or LO..HI within 1..1024, not '%1'").arg(range));
    r.search.minReplicas = ends.size() == 2 ? lo : 1;
    r.search.maxReplicas = hi;
    const QString routers = args.value("router", QStringLiteral("least-outstanding"));
    r.search.routers.clear();
    if (routers == QLatin1String("all")) {
        r.search.routers = {RouterPolicy::LeastOutstanding, RouterPolicy::PrefixAffinity,
                            RouterPolicy::LeastKv, RouterPolicy::RoundRobin};
    } else {
        for (const QString &name : routers.split(',')) {
            const auto p = parseRouterPolicy(name.trimmed().toStdString());
            if (!p)
                return usage(QStringLiteral("unknown router '%1' (round-robin, least-outstanding, least-kv, "
                                            "prefix-affinity, or all)")
                                 .arg(name));
            r.search.routers.push_back(*p);
        }
    }
    const auto window =
        parseSpan(args.value("window", QStringLiteral("1h")).toStdString(), fromSeconds(7 * 86400.0));
    if (!window)
        return usage(QStringLiteral("--window must be a length such as 15m, 1h or 1d (at most 7d), not '%1'")
                         .arg(args.value("window")));
    r.window = *window;
    auto noise = costNoiseFor(args);
    if (!noise)
        return noise.status();
    r.noise = *noise;
    auto config = givenConfig(options);
    if (!config)
        return config.status();
    if (*config)
        r.config = **config;
    if (args.has("export") && !isFleetExportFormat(args.value("export").toStdString()))
        return Status(StatusCode::InvalidArgument, "--export is one of " + std::string(kFleetExportFormats) +
                                                       ", not '" + args.value("export").toStdString() + "'");
    return r;
}

QString clock(double seconds)
{
    const auto s = std::int64_t(seconds);
    const std::int64_t day = s / 86400, h = s % 86400 / 3600, m = s % 3600 / 60;
    return (day ? QStringLiteral("d%1 ").arg(day + 1) : QString()) +
           QStringLiteral("%1:%2").arg(h, 2, 10, QChar('0')).arg(m, 2, 10, QChar('0'));
}

void printText(QTextStream &out, const FleetPlan &plan, const FleetPlanRequest &r, const nlohmann::json &doc)
{
    out << QStringLiteral("capacity plan: %1, windows of %2 s at %3x the trace's rate, replicas %4..%5\n")
               .arg(q(describe(r.slo)))
               .arg(toSeconds(r.window))
               .arg(r.rateScale)
               .arg(r.search.minReplicas)
               .arg(r.search.maxReplicas);
    out << QStringLiteral("%1 %2 %3 %4 %5 %6\n")
               .arg(QStringLiteral("window"), -10)
               .arg(QStringLiteral("requests"), 9)
               .arg(QStringLiteral("replicas"), 9)
               .arg(QStringLiteral("router"), -18)
               .arg(QStringLiteral("p99 s"), 8)
               .arg(QStringLiteral("busiest"), 8);
    for (const PlannedWindow &w : plan.windows) {
        const WindowChoice &c = w.choice;
        if (!c.done) {
            out << QStringLiteral("%1 %2 (not planned: cancelled)\n")
                       .arg(clock(w.beginS), -10)
                       .arg(w.requests, 9);
            continue;
        }
        double busiest = 0;
        for (double b : c.verdict.replicaBusy)
            busiest = std::max(busiest, b);
        out << QStringLiteral("%1 %2 %3 %4 %5 %6\n")
                   .arg(clock(w.beginS), -10)
                   .arg(w.requests, 9)
                   .arg(c.replicas > 0 ? QString::number(c.replicas)
                                       : QStringLiteral(">%1").arg(r.search.maxReplicas),
                        9)
                   .arg(q(std::string(routerPolicyName(c.router))), -18)
                   .arg(c.verdict.p99S, 8, 'f', 3)
                   .arg(QStringLiteral("%1%").arg(100 * busiest, 0, 'f', 0), 8);
    }
    if (!plan.daily.empty()) {
        out << "replicas by hour of day (the most any day needed):";
        for (std::size_t i = 0; i < plan.daily.size(); ++i)
            out << (i % 12 ? " " : "\n  ") << plan.daily[i];
        out << "\n";
    }
    out << QStringLiteral("peak %1 replicas; %2 replica-hours; %3 simulations in %4 s\n")
               .arg(plan.peakReplicas)
               .arg(plan.replicaHours, 0, 'f', 1)
               .arg(plan.evaluations)
               .arg(plan.wallSeconds, 0, 'f', 1);
    if (doc.contains("cost"))
        out << QStringLiteral("cost: %1 in all, %2 per hour at the peak, %3 per 1M output tokens\n")
                   .arg(plan.cost, 0, 'f', 2)
                   .arg(plan.peakReplicas * r.replicaCostPerHour, 0, 'f', 2)
                   .arg(plan.costPerMillionOutput, 0, 'f', 4);
    if (plan.anyUnmet)
        out << QStringLiteral("warning: some windows miss the SLO even with %1 replicas (raise --replicas)\n")
                   .arg(r.search.maxReplicas);
    if (plan.cancelled)
        out << "cancelled: the windows planned so far are kept\n";
}

} // namespace

int runPlan(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("plan"));
    auto parsed = parse(options, args);
    if (!parsed)
        return fail(q(parsed.status().message()), 2);
    FleetPlanRequest &request = *parsed;
    auto opened = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!opened)
        return fail(q(opened.status().message()));
    const std::shared_ptr<TraceStore> store = std::move(*opened);
    if (request.source.kind == ReplaySource::Kind::Trace) {
        if (auto t = store->trace(request.source.id); !t)
            return fail(q(t.status().message()));
    } else if (auto s = store->session(request.source.id); !s) {
        return fail(q(s.status().message()));
    } else if (options.config.isEmpty()) {
        // a session's replicas run the config it started with (as its replay would)
        if (auto history = store->configHistory(request.source.id); history && !history->empty())
            request.config = history->front().config;
    }
    auto calibration = calibrationFor(*store, options, args);
    if (!calibration)
        return fail(q(calibration.status().message()) +
                    QStringLiteral("\n(a calibration is the cost model the plan simulates with: "
                                   "batchpilot calibrate --model M [--preset P] --quick)"));
    QTextStream err(stderr);
    auto config = simulatedReplicaConfig(options, *calibration, request.config, [&](const std::string &line) {
        err << "plan: " << q(line) << "\n";
    });
    if (!config)
        return fail(q(config.status().message()), 2);
    request.config = *config;

    SigintFlag sigint;
    request.search.cancel = sigint.flag();
    request.search.progress = [&](std::size_t done, std::size_t total) {
        err << QStringLiteral("plan: %1/%2 windows\n").arg(done).arg(total);
        err.flush();
    };
    auto plan = planFleet(*store, *calibration, request);
    if (!plan)
        return fail(q(plan.status().message()));
    nlohmann::json doc = planDocument(*plan, request, *calibration);
    if (!args.has("no-store")) {
        StoredPlan stored;
        if (request.source.kind == ReplaySource::Kind::Trace)
            stored.sourceTraceId = request.source.id;
        else
            stored.sourceSessionId = request.source.id;
        stored.calibrationId = calibration->id;
        stored.slo = describe(request.slo);
        stored.result = doc;
        auto id = saveCapacityPlan(*store, stored);
        if (!id)
            return fail(q(id.status().message()));
        doc["plan_id"] = *id;
    }
    QTextStream out(stdout);
    if (args.has("export")) {
        auto text = exportFleetPlan(doc, args.value("export").toStdString());
        if (!text)
            return fail(q(text.status().message()), 2);
        out << q(*text);
    } else if (args.has("json")) {
        out << q(doc.dump(2)) << "\n";
    } else {
        printText(out, *plan, request, doc);
        if (doc.contains("plan_id"))
            out << QStringLiteral("stored as capacity plan %1\n").arg(doc["plan_id"].get<std::int64_t>());
    }
    return plan->cancelled ? 130 : 0;
}

} // namespace bp::app
