#include "cmd_autoscale.h"
#include "cli_text.h"
#include "sigint_flag.h"

#include "command_args.h"
#include "commands.h"
#include "remote/settings_fetch.h"

#include "engine/core/span_text.h"
#include "engine/sim/fleet/autoscale_export.h"
#include "engine/sim/fleet/fleet_watch.h"

#include <QFile>
#include <QStringList>
#include <QTextStream>
#include <QThread>
#include <QUrl>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>

namespace bp::app {

std::optional<double> optionSeconds(CommandArgs &args, const QString &flag, double fallback, double maxS)
{
    if (!args.has(flag))
        return fallback;
    const std::string text = args.value(flag).toStdString();
    if (text == "0")
        return 0.0;
    if (auto span = parseSpan(text, fromSeconds(maxS)))
        return toSeconds(*span);
    return std::nullopt;
}

namespace {

constexpr const char *kUsage =
    "usage: batchpilot autoscale (--trace ID --slo SPEC [--calibration ID|FILE] [--config FILE] "
    "[--rate-scale "
    "K] [--window LEN] [--cold-start LEN | --model-bytes N --load-bandwidth B --warmup LEN] [--initial N] "
    "[--router P] [--router-queue N] [--replica-cost X] [--plan ID] [--no-compare] [--search "
    "[--required-share F]] [--jobs N] [--noise none|mean|drawn] [--no-store] | --watch URL[,URL...] | "
    "--decide | --export keda|hpa [--deployment NAME] [--namespace NS] "
    "[--prometheus URL] [--server vllm|tgi|sglang|batchpilot] [--timezone TZ] [-o FILE]) [--policy "
    "reactive|scheduled|predictive] "
    "[--metric queue|running|kv|rate] [--target X] [--min N] [--max N] [--up-window LEN] [--down-window LEN] "
    "[--tolerance F] [--schedule N,N,...] [--slot LEN] [--lead LEN] [--replica-rate R] [--horizon LEN] "
    "[--period LEN] [--count N] [--token T] [--json]";

int fail(const QString &message, int code = 1)
{
    return failCommand(QStringLiteral("autoscale"), message, code);
}

Status usage(const QString &why)
{
    return Status(StatusCode::InvalidArgument, (why + "\n" + kUsage).toStdString());
}

Result<ScaleBounds> boundsFrom(CommandArgs &args)
{
    const auto lo = args.number("min", 1, 0, 10000), hi = args.number("max", 8, 1, 10000);
    if (!lo || !hi)
        return usage(args.error());
    return ScaleBounds{int(*lo), int(*hi)};
}

// The default target per metric: what a replica of a small model holds
// comfortably (queue 4 requests waiting, 32 running sequences, KV 70%,
// 1 request/s); an operator sets their own.
double defaultTarget(ScaleMetric metric)
{
    switch (metric) {
    case ScaleMetric::QueueDepth: return 4;
    case ScaleMetric::RunningSequences: return 32;
    case ScaleMetric::KvUsage: return 0.7;
    case ScaleMetric::RequestRate: return 1;
    }
    return 1;
}

Result<ReactiveKnobs> reactiveFrom(CommandArgs &args)
{
    ReactiveKnobs k;
    auto metric = parseScaleMetric(args.value("metric", QStringLiteral("queue")).toStdString());
    if (!metric)
        return usage(q(metric.status().message()));
    k.metric = *metric;
    const auto target = args.number("target", defaultTarget(k.metric), 1e-9, 1e9);
    const auto tolerance = args.number("tolerance", k.tolerance, 0, 0.99);
    const auto up = optionSeconds(args, "up-window", k.upWindowS, 3600),
               down = optionSeconds(args, "down-window", k.downWindowS, 3600);
    if (!target || !tolerance)
        return usage(args.error());
    if (!up || !down)
        return usage(QStringLiteral("--up-window and --down-window are 0 or a length up to 1h (90s, 5m)"));
    auto bounds = boundsFrom(args);
    if (!bounds)
        return bounds.status();
    k.target = *target;
    k.tolerance = *tolerance;
    k.upWindowS = *up;
    k.downWindowS = *down;
    k.bounds = *bounds;
    if (Status s = validate(k); !s)
        return usage(q(s.message()));
    return k;
}

Result<ScheduledKnobs> scheduledFrom(CommandArgs &args)
{
    ScheduledKnobs k;
    if (!args.has("schedule"))
        return usage(QStringLiteral("--policy scheduled needs --schedule N,N,... (replicas per slot, e.g. "
                                    "plan's hour-of-day schedule)"));
    for (const QString &part : args.value("schedule").split(',')) {
        bool ok = false;
        const int n = part.trimmed().toInt(&ok);
        if (!ok || n < 0 || n > 10000)
            return usage(QStringLiteral("--schedule: '%1' is not a replica count").arg(part));
        k.replicas.push_back(n);
    }
    const auto slot = optionSeconds(args, "slot", k.slotS, 7 * 86400),
               lead = optionSeconds(args, "lead", 180, 86400);
    if (!slot || *slot <= 0 || !lead)
        return usage(QStringLiteral("--slot is a length (1h, 15m); --lead is 0 or a length"));
    k.slotS = *slot;
    k.leadS = *lead;
    if (Status s = validate(k); !s)
        return usage(q(s.message()));
    return k;
}

Result<PredictiveKnobs> predictiveFrom(CommandArgs &args, double periodS)
{
    PredictiveKnobs k;
    if (!args.has("replica-rate"))
        return usage(
            QStringLiteral("--policy predictive needs --replica-rate R (requests/s one replica serves "
                           "within the SLO: plan's figures, or a calibration's)"));
    const auto rate = args.number("replica-rate", 1, 1e-6, 1e6);
    const auto alpha = args.number("alpha", k.alpha, 1e-3, 1), beta = args.number("beta", k.beta, 0, 1);
    const auto headroom = args.number("headroom", k.headroom, 1, 10);
    const auto horizon = optionSeconds(args, "horizon", k.horizonS, 86400);
    const auto down = optionSeconds(args, "down-window", k.downWindowS, 3600);
    if (!rate || !alpha || !beta || !headroom)
        return usage(args.error());
    if (!horizon || !down)
        return usage(QStringLiteral("--horizon and --down-window are 0 or a length (3m, 300s)"));
    auto bounds = boundsFrom(args);
    if (!bounds)
        return bounds.status();
    k.replicaRate = *rate;
    k.alpha = *alpha;
    k.beta = *beta;
    k.headroom = *headroom;
    k.horizonS = *horizon;
    k.downWindowS = *down;
    k.periodS = periodS;
    k.bounds = *bounds;
    if (Status s = validate(k); !s)
        return usage(q(s.message()));
    return k;
}

struct Watch {
    std::vector<QUrl> urls;
    double periodS = 15;
    int count = 40;
    QString token;
    bool json = false;
};

Result<Watch> watchFrom(CommandArgs &args)
{
    Watch w;
    for (const QString &part : args.value("watch").split(',', Qt::SkipEmptyParts)) {
        QUrl url(part.trimmed());
        if (!url.isValid() || (url.scheme() != "http" && url.scheme() != "https") || url.host().isEmpty())
            return usage(QStringLiteral("--watch: '%1' is not an http(s) URL").arg(part));
        w.urls.push_back(url);
    }
    if (w.urls.empty())
        return usage(QStringLiteral("--watch needs at least one server URL"));
    const auto period = optionSeconds(args, "period", 15, 3600);
    const auto count = args.number("count", 40, 1, 1e6);
    if (!period || *period < 0.05)
        return usage(QStringLiteral("--period is a length from 50ms to 1h (15s, 1m)"));
    if (!count)
        return usage(args.error());
    w.periodS = *period;
    w.count = int(*count);
    w.token = args.value("token");
    w.json = args.has("json");
    return w;
}

ServerScrape scrapeOne(const QUrl &base, const QString &token, double periodS)
{
    ServerScrape s;
    s.url = base.toString().toStdString();
    // A scrape never outlasts its period (at least 1 s, at most 10 s).
    const auto timeout = fromSeconds(std::clamp(periodS, 1.0, 10.0));
    auto parsed = remote::getExposition(remote::routeUrl(base, QStringLiteral("/metrics")), token, timeout);
    if (parsed)
        s.metrics = std::move(*parsed);
    else if (parsed.status().code() == StatusCode::InvalidArgument)
        s.error = "unreadable /metrics: " + parsed.status().message();
    else
        s.error = parsed.status().message();
    return s;
}

nlohmann::json roundJson(const FleetObservation &o, const ScaleDecision &d, const FleetObserver &observer)
{
    nlohmann::json servers = nlohmann::json::array();
    for (const ServerReading &r : observer.readings()) {
        nlohmann::json s{{"url", r.url}};
        if (!r.error.empty()) {
            s["error"] = r.error;
        } else {
            s["server"] = r.server;
            s["waiting"] = r.waiting;
            s["running"] = r.running;
            s["kv_usage"] = r.kvUsage ? nlohmann::json(*r.kvUsage) : nlohmann::json();
            s["request_rate"] = r.rate ? nlohmann::json(*r.rate) : nlohmann::json();
        }
        servers.push_back(std::move(s));
    }
    return {{"at_s", o.atS},          {"ready", o.ready},      {"waiting", o.waiting},
            {"running", o.running},   {"kv_usage", o.kvUsage}, {"request_rate", o.arrivalRate},
            {"replicas", d.replicas}, {"why", d.why},          {"servers", servers}};
}

int watch(const Watch &w, AutoscalePolicy &policy)
{
    QTextStream out(stdout), err(stderr);
    const double seconds = w.count * w.periodS;
    const QString length = seconds < 120 ? QString::number(seconds, 'f', seconds < 10 ? 1 : 0) + " s"
                                         : QString::number(seconds / 60, 'f', seconds < 600 ? 1 : 0) + " min";
    err << "autoscale --watch: " << w.urls.size() << (w.urls.size() == 1 ? " server" : " servers") << ", "
        << q(policy.describe()) << "; every " << w.periodS << " s for " << w.count
        << (w.count == 1 ? " round" : " rounds") << " (about " << length
        << "; --count sets it, Ctrl-C stops). Advice only: nothing is changed.\n";
    err.flush();
    SigintFlag sigint;
    FleetObserver observer;
    const auto start = std::chrono::steady_clock::now();
    int failedRounds = 0;
    for (int round = 0; round < w.count && !sigint.flag()->load(); ++round) {
        const auto due = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(round * w.periodS));
        while (std::chrono::steady_clock::now() < due && !sigint.flag()->load())
            QThread::msleep(50);
        if (sigint.flag()->load())
            break;
        std::vector<ServerScrape> scrapes;
        for (const QUrl &url : w.urls)
            scrapes.push_back(scrapeOne(url, w.token, w.periodS));
        const double atS = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const FleetObservation o = observer.observe(atS, scrapes);
        if (o.ready == 0)
            ++failedRounds;
        const ScaleDecision d = policy.decide(o);
        if (w.json) {
            out << q(roundJson(o, d, observer).dump()) << "\n";
        } else {
            out << QStringLiteral("[%1 s] ready %2/%3, waiting %4, running %5, kv %6, rate %7 req/s -> %8 "
                                  "replicas: %9\n")
                       .arg(atS, 0, 'f', 1)
                       .arg(o.ready)
                       .arg(w.urls.size())
                       .arg(o.waiting, 0, 'g', 4)
                       .arg(o.running, 0, 'g', 4)
                       .arg(o.kvUsage, 0, 'f', 2)
                       .arg(o.arrivalRate, 0, 'f', 2)
                       .arg(d.replicas)
                       .arg(q(d.why));
            for (const ServerReading &r : observer.readings())
                if (!r.error.empty())
                    out << "    " << q(r.url) << ": " << q(r.error) << "\n";
        }
        out.flush();
    }
    if (failedRounds)
        err << "autoscale --watch: " << failedRounds << " rounds had no server answering\n";
    return 0;
}

// "-o FILE" is the conventional spelling; CommandArgs knows only "--" flags.
QStringList normalized(const QStringList &args)
{
    QStringList out;
    for (const QString &a : args)
        out << (a == QLatin1String("-o") ? QStringLiteral("--output") : a);
    return out;
}

// --export: the policy as a manifest (engine/sim/fleet/autoscale_export.h),
// on stdout or --output FILE.
int exportManifest(CommandArgs &args)
{
    auto knobs = autoscaleKnobsFromArgs(args);
    if (!knobs)
        return fail(q(knobs.status().message()), 2);
    ManifestTarget target;
    target.deployment = args.value("deployment", q(target.deployment)).toStdString();
    target.ns = args.value("namespace", q(target.ns)).toStdString();
    target.prometheus = args.value("prometheus", q(target.prometheus)).toStdString();
    target.server = args.value("server", q(target.server)).toStdString();
    target.timezone = args.value("timezone", q(target.timezone)).toStdString();
    const auto period = optionSeconds(args, "period", 15, 3600);
    if (!period || *period < 1)
        return fail(q(usage(QStringLiteral("--period is a length from 1s to 1h (15s, 1m)")).message()), 2);
    target.periodS = *period;
    auto text = exportAutoscaler(*knobs, args.value("export").toStdString(), target);
    if (!text)
        return fail(q(text.status().message()), 2);
    if (!args.has("output")) {
        QTextStream(stdout) << q(*text);
        return 0;
    }
    QFile file(args.value("output"));
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        file.write(text->data(), qint64(text->size())) != qint64(text->size()) || !file.flush())
        return fail(QStringLiteral("cannot write '%1': %2").arg(args.value("output"), file.errorString()));
    return 0;
}

} // namespace

Result<AutoscaleKnobs> autoscaleKnobsFromArgs(CommandArgs &args)
{
    const QString policy = args.value("policy", QStringLiteral("reactive"));
    const auto period = optionSeconds(args, "period", 15, 3600);
    const auto wrap = [](auto knobs) -> Result<AutoscaleKnobs> {
        if (!knobs)
            return knobs.status();
        return AutoscaleKnobs(*std::move(knobs));
    };
    if (policy == "reactive")
        return wrap(reactiveFrom(args));
    if (policy == "scheduled")
        return wrap(scheduledFrom(args));
    if (policy == "predictive")
        return wrap(predictiveFrom(args, period && *period > 0 ? *period : 15));
    return usage(QStringLiteral("--policy is reactive, scheduled or predictive, not '%1'").arg(policy));
}

Result<std::unique_ptr<AutoscalePolicy>> autoscalePolicyFromArgs(CommandArgs &args)
{
    auto knobs = autoscaleKnobsFromArgs(args);
    if (!knobs)
        return knobs.status();
    return makePolicy(*knobs);
}

int runAutoscale(const AppOptions &options)
{
    CommandArgs args(normalized(options.commandArgs), commandOptions("autoscale"));
    if (!args.error().isEmpty())
        return fail(q(usage(args.error()).message()), 2);
    if (!args.positional().isEmpty())
        return fail(q(usage(QStringLiteral("unexpected '%1'").arg(args.positional().front())).message()), 2);
    int modes = 0;
    for (const char *mode : {"watch", "export", "trace", "decide"})
        modes += args.has(QLatin1String(mode));
    if (modes > 1)
        return fail(
            q(usage(QStringLiteral("--trace, --watch, --decide and --export are modes: give one")).message()),
            2);
    if (args.has("export"))
        return exportManifest(args);
    if (args.has("trace"))
        return runAutoscaleTrace(options, args);
    if (args.has("decide")) {
        auto policy = autoscalePolicyFromArgs(args);
        if (!policy)
            return fail(q(policy.status().message()), 2);
        return runAutoscaleDecide(**policy);
    }
    if (!args.has("watch"))
        return fail(q(usage(QStringLiteral("give --trace ID (replay over a trace), --watch URL[,URL...] (the "
                                           "servers to advise on), --decide (observations on stdin) or "
                                           "--export keda|hpa"))
                          .message()),
                    2);
    auto w = watchFrom(args);
    if (!w)
        return fail(q(w.status().message()), 2);
    auto policy = autoscalePolicyFromArgs(args);
    if (!policy)
        return fail(q(policy.status().message()), 2);
    return watch(*w, **policy);
}

} // namespace bp::app
