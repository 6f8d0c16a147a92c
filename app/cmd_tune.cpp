#include "cmd_tune.h"

#include "cmd_calibrate.h"
#include "command_args.h"
#include "commands.h"
#include "engine_host.h"

#include "engine/config/config_json.h"
#include "engine/sim/calibration_store.h"
#include "engine/sim/tuner.h"
#include "engine/sim/tuning_document.h"
#include "engine/replay/replay_plan.h"
#include "engine/replay/replayer.h"
#include "engine/store/trace_store.h"
#include "engine/store/tuning_store.h"

#include <QFile>
#include <QTextStream>

#include <atomic>
#include <cmath>
#include <csignal>
#include <thread>

namespace bp::app {

namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void onTuneInterrupt(int)
{
    g_interrupted.store(true);
}

// Ctrl-C stops the search (what was evaluated is reported) or the
// verification replay (its session ends cleanly); restored on scope exit.
class InterruptGuard {
public:
    InterruptGuard() : m_old(std::signal(SIGINT, onTuneInterrupt)) { g_interrupted = false; }
    ~InterruptGuard() { std::signal(SIGINT, m_old); }

private:
    void (*m_old)(int);
};

QString q(const std::string &s)
{
    return QString::fromStdString(s);
}

constexpr const char *kUsage =
    "usage: batchpilot tune (--trace ID | --session ID) --slo 'p99<=200ms' | "
    "'ttft_p99<=500ms,tpot_p99<=50ms' "
    "[--objective goodput|throughput] [--speed X] [--length-scale S] [--limit N] [--budget N] [--instances "
    "N] "
    "[--jobs N] [--calibration ID|FILE] [--noise none|mean|drawn] [--config FILE] [--output FILE] "
    "[--no-verify] "
    "[--json]";

int fail(const QString &message, int code = 1)
{
    QTextStream(stderr) << "batchpilot tune: " << message << "\n";
    return code;
}

QString ms(double seconds)
{
    if (std::isinf(seconds))
        return QStringLiteral("inf");
    return QString::number(seconds * 1e3, 'f', seconds < 0.01 ? 2 : 1);
}

// The measured figures of a recorded session (the verification replay).
Result<TuneFigures> measuredFigures(const TraceStore &store, std::int64_t sessionId, std::size_t requests,
                                    const TuneSlo &slo)
{
    auto rows = store.requests(sessionId);
    if (!rows)
        return rows.status();
    std::vector<TuneSample> samples;
    samples.reserve(rows->size());
    for (const StoredRequest &r : *rows)
        samples.push_back({r.arrival, r.total, r.timeToFirstToken, r.outputTokens, r.status == StatusCode::Ok,
                           r.status == StatusCode::OutOfRange});
    TuneFigures f = figuresOf(samples, requests, slo);
    auto batches = store.batches(sessionId);
    if (!batches)
        return batches.status();
    std::size_t members = 0;
    for (const StoredBatch &b : *batches)
        members += std::size_t(b.size);
    f.meanBatch = batches->empty() ? 0 : double(members) / double(batches->size());
    return f;
}

QString row(const QString &label, const TuneFigures &f, bool tokenLevel, int width)
{
    QString s = QStringLiteral("  %1 %2 %3 %4 %5")
                    .arg(label, -width)
                    .arg(QString::number(f.throughputPerS, 'f', 1), 9)
                    .arg(QString::number(f.goodputPerS, 'f', 1), 9)
                    .arg(ms(f.p50S), 9)
                    .arg(ms(f.p99S), 9);
    if (tokenLevel)
        s += QStringLiteral(" %1 %2").arg(ms(f.ttftP99S), 9).arg(ms(f.tpotP99S), 9);
    s += QStringLiteral(" %1 %2 %3")
             .arg(std::isinf(f.sloRatio) ? QStringLiteral("inf") : QString::number(f.sloRatio, 'f', 2), 6)
             .arg(QString::number(f.meanBatch, 'f', 1), 6)
             .arg(f.sloMet ? QStringLiteral("yes") : QStringLiteral("no"), 4);
    return s + "\n";
}

QString header(bool tokenLevel, int width)
{
    QString s = QStringLiteral("  %1 %2 %3 %4 %5")
                    .arg(QStringLiteral("config"), -width)
                    .arg(QStringLiteral("thr/s"), 9)
                    .arg(QStringLiteral("goodput/s"), 9)
                    .arg(QStringLiteral("p50 ms"), 9)
                    .arg(QStringLiteral("p99 ms"), 9);
    if (tokenLevel)
        s += QStringLiteral(" %1 %2").arg(QStringLiteral("ttft p99"), 9).arg(QStringLiteral("tpot p99"), 9);
    return s + QStringLiteral(" %1 %2 %3\n")
                   .arg(QStringLiteral("ratio"), 6)
                   .arg(QStringLiteral("batch"), 6)
                   .arg(QStringLiteral("SLO"), 4);
}

QString errorText(double predicted, double measured)
{
    if (!std::isfinite(predicted) || !std::isfinite(measured) || measured == 0)
        return QStringLiteral("-");
    const double percent = std::round(100 * (predicted / measured - 1));
    return QStringLiteral("%1%2%").arg(percent >= 0 ? "+" : "").arg(percent == 0 ? 0.0 : percent, 0, 'f', 0);
}

} // namespace

int runTune(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("tune"));
    if (!args.error().isEmpty())
        return fail(args.error() + "\n" + kUsage, 2);
    if (!args.positional().isEmpty())
        return fail(QStringLiteral("unexpected '%1'\n").arg(args.positional().front()) + kUsage, 2);
    if (args.has("trace") == args.has("session"))
        return fail(QStringLiteral("give one of --trace ID or --session ID\n") + kUsage, 2);
    if (!args.has("slo"))
        return fail(QStringLiteral("--slo is required, e.g. --slo 'p99<=200ms'\n") + kUsage, 2);
    auto slo = parseTuneSlo(args.value("slo").toStdString());
    if (!slo)
        return fail(q(slo.status().message()), 2);
    const QString objectiveName = args.value("objective", QStringLiteral("goodput"));
    const auto objective = parseTuneObjective(objectiveName.toStdString());
    if (!objective)
        return fail(QStringLiteral("--objective must be goodput or throughput, not '%1'").arg(objectiveName),
                    2);
    const auto sourceId = args.number(args.has("trace") ? "trace" : "session", 0, 1, 9e18);
    const auto speed = args.number("speed", 1, 1e-6, 1e6);
    const auto lengthScale = args.number("length-scale", 1, 1e-6, 1e3);
    const auto limit = args.number("limit", 0, 0, 1e12);
    const auto budget = args.number("budget", 240, 1, 100000);
    const auto instances = args.number("instances", 2, 1, 16);
    auto noise = costNoiseFor(args);
    if (!noise)
        return fail(q(noise.status().message()), 2);
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const auto jobs = args.number("jobs", std::min(cores, 16), 1, 16);
    if (!sourceId || !speed || !lengthScale || !limit || !budget || !instances || !jobs)
        return fail(args.error(), 2);

    auto store = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!store)
        return fail(q(store.status().message()));
    ReplayOptions ro;
    ro.source = {args.has("trace") ? ReplaySource::Kind::Trace : ReplaySource::Kind::Session,
                 std::int64_t(*sourceId)};
    QString sourceName;
    if (ro.source.kind == ReplaySource::Kind::Trace) {
        auto t = (*store)->trace(ro.source.id);
        if (!t)
            return fail(q(t.status().message()));
        sourceName = QStringLiteral("trace %1 '%2'").arg(t->id).arg(q(t->name));
    } else {
        auto s = (*store)->session(ro.source.id);
        if (!s)
            return fail(q(s.status().message()));
        sourceName = QStringLiteral("session %1").arg(s->id);
    }
    if (!options.config.isEmpty()) {
        auto config = batchingConfigFor(options);
        if (!config)
            return fail(q(config.status().message()));
        ro.config = *config;
    }
    ro.speed = *speed;
    ro.lengthScale = *lengthScale;
    ro.limit = std::size_t(*limit);
    ro.clock = ReplayClock::Simulated;
    auto calibration = calibrationFor(**store, options, args);
    if (!calibration)
        return fail(q(calibration.status().message()) +
                    QStringLiteral("\n(a calibration is the cost model the search simulates with: "
                                   "batchpilot calibrate --model M [--preset P] --quick)"));
    const Calibration &cal = *calibration;
    auto plan = planReplay(**store, ro, cal.modelInfo());
    if (!plan)
        return fail(q(plan.status().message()));

    TuneWorkload workload;
    workload.limits = cal.modelInfo().limits();
    workload.cost = cal.cost;
    // As the simulated replay counts outputs (engine/sim/simulated_replay.cpp).
    workload.output = cal.model == "builtin:echo" ? OutputKind::Echo
                      : cal.generative            ? OutputKind::Generated
                                                  : OutputKind::None;
    workload.positions = cal.positions;
    workload.noise = *noise;
    TuneOptions to;
    to.slo = *slo;
    to.objective = *objective;
    to.budget = std::size_t(*budget);
    to.maxInstances = int(*instances);
    to.threads = int(*jobs);
    to.base = plan->config;
    to.maxLength = cal.maxSequenceLength;
    to.generative = cal.generative;
    for (std::size_t i = 0; i < plan->requests.size(); ++i) {
        const PlannedRequest &r = plan->requests[i];
        workload.arrivals.push_back({r.offset, r.inputTokens, r.maxNewTokens, i + 1, 0, std::nullopt});
        to.inputLengths.push_back(r.inputTokens);
    }
    const double spanS = plan->requests.size() > 1
                             ? toSeconds(plan->requests.back().offset - plan->requests.front().offset)
                             : 0;
    const double offered = spanS > 0 ? double(plan->requests.size()) / spanS : 0;

    QTextStream err(stderr);
    TimePoint lastShown{};
    to.progress = [&](std::size_t done, std::size_t total) {
        const TimePoint now = SteadyClock::now();
        if (now - lastShown < std::chrono::seconds(1))
            return;
        lastShown = now;
        err << QStringLiteral("tune: %1 simulations of about %2\n").arg(done).arg(total);
        err.flush();
    };
    InterruptGuard guard;
    to.cancel = &g_interrupted;
    auto result = tune(simulationEvaluator(workload, *slo), to);
    if (!result)
        return fail(q(result.status().message()));
    const TuneResult &r = *result;
    if (!r.recommended)
        return fail(QStringLiteral("cancelled before any config was evaluated"), 130);
    const TuneCandidate &rec = r.candidates[*r.recommended];

    if (args.has("output")) {
        QFile f(args.value("output"));
        const QByteArray text = QByteArray::fromStdString(toJson(rec.config).dump(2) + "\n");
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size())
            return fail(QStringLiteral("cannot write %1: %2").arg(f.fileName(), f.errorString()));
    }

    // The result as stored (without the candidates) and printed by --json.
    TuningContext context;
    context.source = ro.source;
    context.requests = plan->requests.size();
    context.offeredPerS = offered;
    context.speed = ro.speed;
    context.lengthScale = ro.lengthScale;
    context.limit = ro.limit;
    context.slo = *slo;
    context.objective = *objective;
    context.jobs = to.threads;
    nlohmann::json j = tuningDocument(r, context, cal);
    const StoredTuning stored = storedTuning(j, context, cal);
    auto tuningId = saveTuning(**store, stored);
    if (!tuningId)
        return fail(QStringLiteral("cannot store the result: ") + q(tuningId.status().message()));
    j["tuning_id"] = *tuningId;

    // Verification: the same arrivals, for real, under the recommendation.
    std::optional<ReplayOutcome> verified;
    std::optional<TuneFigures> measured;
    QString verifyNote;
    if (!args.has("no-verify") && !r.cancelled) {
        AppOptions model = options;
        model.model = q(cal.model);
        if (!cal.preset.empty())
            model.preset = q(cal.preset);
        if (!cal.device.empty())
            model.device = q(cal.device);
        model.threads = cal.threads;
        auto backend = backendFor(model);
        if (!backend)
            return fail(QStringLiteral("cannot load %1 to verify: %2 (--no-verify skips the check)")
                            .arg(q(cal.describe()), q(backend.status().message())));
        ReplayOptions real = ro;
        real.clock = ReplayClock::Real;
        real.config = rec.config;
        real.notes = "tune: verifies " + rec.label + " (" + describe(*slo) + ")";
        real.progressInterval = std::chrono::seconds(2);
        err << QStringLiteral(
                   "tune: verifying %1 with a real-clock replay of %2 requests (%3 s of arrivals)\n")
                   .arg(q(rec.label))
                   .arg(plan->requests.size())
                   .arg(spanS, 0, 'f', 1);
        err.flush();
        Replayer replayer(*store, *backend);
        auto outcome = replayer.run(
            real,
            [&](const ReplayProgress &p) {
                err << QStringLiteral("verify: %1/%2 done\n").arg(p.finished).arg(p.total);
                err.flush();
            },
            &g_interrupted);
        if (!outcome)
            return fail(QStringLiteral("verification replay: ") + q(outcome.status().message()));
        verified = *outcome;
        auto m = measuredFigures(**store, outcome->sessionId, plan->requests.size(), *slo);
        if (!m)
            return fail(q(m.status().message()));
        measured = *m;
        j["verification"] = {{"session_id", verified->sessionId},
                             {"wall_s", verified->wallSeconds},
                             {"max_lateness_us", toMicros(verified->maxLateness)},
                             {"cancelled", verified->cancelled},
                             {"measured", tuneFiguresJson(*measured)}};
        if (Status s = setTuningVerification(**store, *tuningId, verified->sessionId, j["verification"]); !s)
            return fail(QStringLiteral("cannot store the verification: ") + q(s.message()));
    }

    const bool tokenLevel = slo->tokenLevel() || cal.generative;
    QTextStream out(stdout);
    if (args.has("json")) {
        nlohmann::json candidates = nlohmann::json::array();
        for (const TuneCandidate &c : r.candidates)
            candidates.push_back({{"label", c.label},
                                  {"config", toJson(c.config)},
                                  {"predicted", tuneFiguresJson(c.figures)},
                                  {"pareto", c.pareto}});
        j["candidates"] = candidates;
        j["pareto"] = r.pareto;
        out << q(j.dump(2)) << "\n";
        return r.cancelled || (verified && verified->cancelled) ? 130 : 0;
    }

    out << QStringLiteral("tune %1: %2 requests, %3 req/s offered (speed %4), SLO %5, objective %6\n")
               .arg(sourceName)
               .arg(plan->requests.size())
               .arg(offered, 0, 'f', 1)
               .arg(ro.speed)
               .arg(q(describe(*slo)), objectiveName);
    out << QStringLiteral("  calibration %1: %2; its fit to whole batches: median error %3%, worst %4%; "
                          "cost noise %5\n")
               .arg(cal.id)
               .arg(q(cal.describe()))
               .arg(100 * cal.batchError.medianRel, 0, 'f', 1)
               .arg(100 * cal.batchError.maxRel, 0, 'f', 1)
               .arg(q(std::string(costNoiseName(*noise))));
    out << QStringLiteral(
               "  simulated %1 configs (%2 on the grid, %3 refined) and %4 capacity probes in %5 s, %6 "
               "at a time%7\n")
               .arg(r.candidates.size())
               .arg(r.coarse)
               .arg(r.candidates.size() - r.coarse)
               .arg(r.probes)
               .arg(r.wallSeconds, 0, 'f', 1)
               .arg(to.threads)
               .arg(r.cancelled ? QStringLiteral(" (cancelled)") : QString());
    int width = 6;
    for (const TuneCandidate &c : r.candidates)
        width = std::max(width, int(c.label.size()));
    out << QStringLiteral(
        "\nPareto front (throughput vs SLO ratio = the worst p99 / its bound; <= 1 meets it):\n");
    out << header(tokenLevel, width);
    for (std::size_t i : r.pareto)
        out << row(q(r.candidates[i].label), r.candidates[i].figures, tokenLevel, width);

    out << QStringLiteral("\nRecommended: %1%2\n")
               .arg(q(rec.label))
               .arg(r.anyMet ? QString()
                             : QStringLiteral("  (NO config meets the SLO at this load: the nearest)"));
    {
        const std::string change = describeChange(plan->config, rec.config);
        out << QStringLiteral("  changes from the %1 config: %2\n")
                   .arg(ro.config                                       ? QStringLiteral("--config")
                        : ro.source.kind == ReplaySource::Kind::Session ? QStringLiteral("session's")
                                                                        : QStringLiteral("default"),
                        change.empty() ? QStringLiteral("none") : q(change));
    }
    out << QStringLiteral(
               "  predicted: %1 req/s, goodput %2 req/s (%3 of %4 within the SLO), p50 %5 ms, p99 %6 ms")
               .arg(rec.figures.throughputPerS, 0, 'f', 1)
               .arg(rec.figures.goodputPerS, 0, 'f', 1)
               .arg(rec.figures.good)
               .arg(rec.figures.requests)
               .arg(ms(rec.figures.p50S), ms(rec.figures.p99S));
    if (tokenLevel)
        out << QStringLiteral(", TTFT p99 %1 ms, TPOT p99 %2 ms")
                   .arg(ms(rec.figures.ttftP99S), ms(rec.figures.tpotP99S));
    out << QStringLiteral(", mean batch %1\n").arg(rec.figures.meanBatch, 0, 'f', 1);
    if (rec.figures.unservable)
        out << QStringLiteral(
                   "  %1 requests are beyond the model's positions under any config (out_of_range); the "
                   "figures leave them out\n")
                   .arg(rec.figures.unservable);
    if (r.capacity > 0)
        out << QStringLiteral("  capacity: meets the SLO up to %1x this load (%2 req/s; speed %3)%4\n")
                   .arg(r.capacity, 0, 'f', 2)
                   .arg(r.capacity * offered, 0, 'f', 1)
                   .arg(r.capacity * ro.speed, 0, 'g', 4)
                   .arg(r.capacity >= 4096 ? QStringLiteral(" or more") : QString());
    else if (!r.cancelled)
        out << QStringLiteral("  capacity: misses the SLO even at 1/64 of this load\n");
    if (args.has("output"))
        out << QStringLiteral(
                   "  written to %1 (apply: batchpilot --headless --config %1, or PUT /v1/config)\n")
                   .arg(args.value("output"));

    if (verified) {
        const TuneFigures &p = rec.figures, &m = *measured;
        out << QStringLiteral("\nVerification: real-clock replay, session %1, %2 s wall time%3\n")
                   .arg(verified->sessionId)
                   .arg(verified->wallSeconds, 0, 'f', 1)
                   .arg(verified->cancelled ? QStringLiteral(" (cancelled)") : QString());
        out << QStringLiteral("  %1 %2 %3 %4\n")
                   .arg(QStringLiteral("figure"), -16)
                   .arg(QStringLiteral("predicted"), 10)
                   .arg(QStringLiteral("measured"), 10)
                   .arg(QStringLiteral("error"), 7);
        auto line = [&](const QString &name, double a, double b, int decimals, double scale) {
            out << QStringLiteral("  %1 %2 %3 %4\n")
                       .arg(name, -16)
                       .arg(std::isfinite(a) ? QString::number(a * scale, 'f', decimals)
                                             : QStringLiteral("inf"),
                            10)
                       .arg(std::isfinite(b) ? QString::number(b * scale, 'f', decimals)
                                             : QStringLiteral("inf"),
                            10)
                       .arg(errorText(a, b), 7);
        };
        line(QStringLiteral("throughput/s"), p.throughputPerS, m.throughputPerS, 1, 1);
        line(QStringLiteral("goodput/s"), p.goodputPerS, m.goodputPerS, 1, 1);
        line(QStringLiteral("p50 ms"), p.p50S, m.p50S, 2, 1e3);
        line(QStringLiteral("p99 ms"), p.p99S, m.p99S, 2, 1e3);
        if (tokenLevel) {
            line(QStringLiteral("TTFT p99 ms"), p.ttftP99S, m.ttftP99S, 2, 1e3);
            line(QStringLiteral("TPOT p99 ms"), p.tpotP99S, m.tpotP99S, 2, 1e3);
        }
        line(QStringLiteral("mean batch"), p.meanBatch, m.meanBatch, 1, 1);
        out << QStringLiteral("  %1 %2 %3\n")
                   .arg(QStringLiteral("SLO met"), -16)
                   .arg(p.sloMet ? QStringLiteral("yes") : QStringLiteral("no"), 10)
                   .arg(m.sloMet ? QStringLiteral("yes") : QStringLiteral("no"), 10);
        out << QStringLiteral("  submissions were at most %1 ms late\n")
                   .arg(toMicros(verified->maxLateness) / 1000, 0, 'f', 2);
    } else if (!args.has("no-verify")) {
        out << QStringLiteral("\nNot verified (the search was cancelled).\n");
    }
    out << QStringLiteral("\nStored as tuning %1").arg(*tuningId);
    if (verified)
        out << QStringLiteral("; its report: batchpilot report %1 -o tuned.html").arg(verified->sessionId);
    out << "\n";
    return r.cancelled || (verified && verified->cancelled) ? 130 : 0;
}

} // namespace bp::app
