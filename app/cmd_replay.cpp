// batchpilot replay ID: re-drives a recorded session (or, with --trace, an
// imported trace) into a fresh engine built from the common --model /
// --device / --preset flags and --config (default: the source session's
// last config), records it as a new session, and prints the comparison.
#include "cmd_store.h"

#include "command_args.h"
#include "commands.h"
#include "engine_host.h"

#include "engine/config_json.h"
#include "engine/sim/calibration_store.h"
#include "engine/sim/simulated_replay.h"
#include "engine/store/replayer.h"
#include "engine/store/session_summary.h"

#include <QTextStream>

#include <atomic>
#include <csignal>

namespace bp::app {

namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void onInterrupt(int) { g_interrupted.store(true); }

// Ctrl-C cancels the replay (which then ends its session cleanly) instead
// of killing the process; restored on scope exit.
class InterruptGuard {
public:
    InterruptGuard() : m_old(std::signal(SIGINT, onInterrupt)) { g_interrupted = false; }
    ~InterruptGuard() { std::signal(SIGINT, m_old); }

private:
    void (*m_old)(int);
};

QString q(const std::string &s) { return QString::fromStdString(s); }

int fail(const QString &message, int code = 1)
{
    QTextStream(stderr) << "batchpilot replay: " << message << "\n";
    return code;
}

constexpr const char *kUsage =
    "usage: batchpilot replay ID [--trace] [--speed X] [--length-scale S] [--limit N] [--config FILE] "
    "[--virtual | --simulate [--calibration ID|FILE]] [--no-clamp] [--compare SESSION] [--notes TEXT] [--json]";

// --calibration ID|FILE, or the newest calibration of --model (and
// --preset, --device unless auto, --threads unless 0).
Result<Calibration> calibrationFor(const TraceStore &store, const AppOptions &options, const CommandArgs &args)
{
    if (args.has("calibration"))
        return resolveCalibration(store, args.value("calibration").toStdString());
    const std::string model = options.model.toStdString();
    const bool builtin = model.rfind("builtin:", 0) == 0 && model != "builtin:echo";
    return latestCalibration(store, model, builtin ? options.preset.toStdString() : "",
                             options.device == QLatin1String("auto") ? "" : options.device.toStdString(),
                             options.threads > 0 ? std::optional(options.threads) : std::nullopt);
}

} // namespace

int runReplay(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("replay"));
    if (!args.error().isEmpty())
        return fail(args.error() + "\n" + kUsage, 2);
    if (args.positional().size() != 1)
        return fail(kUsage, 2);
    bool ok = false;
    const qint64 id = args.positional().front().toLongLong(&ok);
    if (!ok || id <= 0)
        return fail(QStringLiteral("'%1' is not a session or trace id").arg(args.positional().front()), 2);
    const auto speed = args.number("speed", 1, 1e-6, 1e6);
    const auto lengthScale = args.number("length-scale", 1, 1e-6, 1e3);
    const auto limit = args.number("limit", 0, 0, 1e12);
    const auto compare = args.number("compare", 0, 1, 9e18);
    if (!speed || !lengthScale || !limit || !compare)
        return fail(args.error(), 2);
    const bool simulate = args.has("simulate");
    if (simulate && args.has("virtual"))
        return fail(QStringLiteral("--virtual and --simulate exclude each other\n") + kUsage, 2);
    if (args.has("calibration") && !simulate)
        return fail(QStringLiteral("--calibration needs --simulate\n") + kUsage, 2);

    auto store = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!store)
        return fail(q(store.status().message()));
    ReplayOptions ro;
    ro.source = {args.has("trace") ? ReplaySource::Kind::Trace : ReplaySource::Kind::Session, id};
    // The source must exist before a model is loaded (which can take a while).
    if (ro.source.kind == ReplaySource::Kind::Trace) {
        if (auto t = (*store)->trace(id); !t)
            return fail(q(t.status().message()));
    } else if (auto s = (*store)->session(id); !s) {
        return fail(q(s.status().message()));
    }
    if (*compare > 0)
        if (auto s = (*store)->session(std::int64_t(*compare)); !s)
            return fail(q(s.status().message()));
    if (!options.config.isEmpty()) {
        auto config = batchingConfigFor(options);
        if (!config)
            return fail(q(config.status().message()));
        ro.config = *config;
    }
    ro.speed = *speed;
    ro.lengthScale = *lengthScale;
    ro.limit = std::size_t(*limit);
    ro.clock = simulate ? ReplayClock::Simulated : args.has("virtual") ? ReplayClock::Virtual : ReplayClock::Real;
    ro.clampToModel = !args.has("no-clamp");
    ro.notes = args.value("notes").toStdString();
    ro.progressInterval = std::chrono::seconds(1);

    // A simulation loads no model: its calibration has the model's facts.
    std::optional<Calibration> calibration;
    std::shared_ptr<Backend> backend;
    if (simulate) {
        auto c = calibrationFor(**store, options, args);
        if (!c)
            return fail(q(c.status().message()));
        calibration = *c;
    } else {
        auto b = backendFor(options);
        if (!b)
            return fail(q(b.status().message()));
        backend = *b;
    }

    QTextStream err(stderr);
    auto progress = [&](const ReplayProgress &p) {
        err << QStringLiteral("replay: %1/%2 sent, %3 done (%4%), source time %5 s\n")
                   .arg(p.submitted)
                   .arg(p.total)
                   .arg(p.finished)
                   .arg(100 * p.fraction(), 0, 'f', 0)
                   .arg(p.sourceSeconds, 0, 'f', 1);
        err.flush();
    };
    InterruptGuard guard;
    auto outcome = simulate ? SimulatedReplay(*store, *calibration).run(ro, progress, &g_interrupted)
                            : Replayer(*store, backend).run(ro, progress, &g_interrupted);
    if (!outcome)
        return fail(q(outcome.status().message()));
    const ReplayOutcome &o = *outcome;

    auto replayed = (*store)->summary(o.sessionId);
    if (!replayed)
        return fail(q(replayed.status().message()));
    std::optional<SessionSummary> baseline;
    const std::int64_t baselineId =
        *compare > 0 ? std::int64_t(*compare) : (ro.source.kind == ReplaySource::Kind::Session ? id : 0);
    if (baselineId > 0) {
        auto s = (*store)->summary(baselineId);
        if (!s)
            return fail(q(s.status().message()));
        baseline = *s;
    }

    QTextStream out(stdout);
    if (args.has("json")) {
        nlohmann::json j{{"session_id", o.sessionId},
                         {"source", {{"kind", args.has("trace") ? "trace" : "session"}, {"id", id}}},
                         {"config", toJson(o.config)},
                         {"requests", o.total},
                         {"submitted", o.submitted},
                         {"rejected_at_submit", o.rejected},
                         {"completed", o.completed},
                         {"failed", o.failed},
                         {"clamped", o.clamped},
                         {"cancelled", o.cancelled},
                         {"wall_s", o.wallSeconds},
                         {"max_lateness_us", toMicros(o.maxLateness)},
                         {"logging_warning", o.warning}};
        if (calibration)
            j["calibration"] = {{"id", calibration->id},
                                {"describe", calibration->describe()},
                                {"batch_fit_error", toJson(calibration->batchError)}};
        j["comparison"] = baseline ? comparisonJson(*baseline, *replayed) : nlohmann::json{{"b", toJson(*replayed)}};
        out << q(j.dump(2)) << "\n";
    } else {
        out << QStringLiteral("replay session %1 (%2 of %3 %4, %5 clock): %6 requests in %7 s wall time\n")
                   .arg(o.sessionId)
                   .arg(o.cancelled ? "cancelled replay" : "replay")
                   .arg(args.has("trace") ? "trace" : "session")
                   .arg(id)
                   .arg(q(std::string(replayClockName(ro.clock))))
                   .arg(o.submitted)
                   .arg(o.wallSeconds, 0, 'f', 2);
        if (calibration)
            out << QStringLiteral("  calibration %1: %2; its fit to whole batches: median error %3%, worst %4%\n")
                       .arg(calibration->id)
                       .arg(q(calibration->describe()))
                       .arg(100 * calibration->batchError.medianRel, 0, 'f', 1)
                       .arg(100 * calibration->batchError.maxRel, 0, 'f', 1);
        if (o.clamped)
            out << QStringLiteral("  %1 inputs clamped to the model's maximum length\n").arg(o.clamped);
        if (ro.clock == ReplayClock::Real)
            out << QStringLiteral("  submissions were at most %1 ms late\n").arg(toMicros(o.maxLateness) / 1000, 0, 'f', 2);
        if (!o.warning.empty())
            out << "  warning: " << q(o.warning) << "\n";
        out << "\n" << q(baseline ? formatComparison(*baseline, *replayed) : formatSummary(*replayed));
    }
    return o.cancelled ? 130 : 0;
}

} // namespace bp::app
