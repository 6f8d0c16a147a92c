#include "cmd_tune.h"
#include "cli_text.h"
#include "sigint_flag.h"
#include "tune_command.h"

#include "cmd_tune_remote.h"
#include "cmd_tune_text.h"

#include "cmd_calibrate.h"
#include "command_args.h"
#include "commands.h"
#include "engine_host.h"
#include "simulation_args.h"
#include "tune_output.h"

#include "engine/config/config_json.h"
#include "engine/sim/tune/tune_pipeline.h"
#include "engine/sim/tune/tuning_document.h"
#include "engine/store/trace_store.h"
#include "engine/store/tuning_store.h"

#include <QFile>
#include <QTextStream>

#include <atomic>
#include <thread>

namespace bp::app {

using namespace tune_command;

namespace {

constexpr const char *kUsage =
    "usage: batchpilot tune (--trace ID | --session ID) --slo 'p99<=200ms' | "
    "'ttft_p99<=500ms,tpot_p99<=50ms' [--objective goodput|throughput] [--speed X] [--length-scale S] "
    "[--limit N] [--budget N] [--instances N] [--jobs N] [--calibration ID|FILE] [--noise none|mean|drawn] "
    "[--config FILE] [--output FILE] [--verify-window busiest:3m|first:2m|all] [--no-verify] [--json] "
    "[--target URL --model NAME [--apply]]";

int fail(const QString &message, int code = 1)
{
    return failCommand(QStringLiteral("tune"), message, code);
}

Result<Parsed> parse(const AppOptions &options, CommandArgs &args)
{
    auto slo = parseSourceAndSlo(args, kUsage, QStringLiteral("--slo is required, e.g. --slo 'p99<=200ms'"));
    if (!slo)
        return slo.status();
    Parsed p;
    TuneSettings &s = p.request.settings;
    s.slo = *slo;
    p.objectiveName = args.value("objective", QStringLiteral("goodput"));
    const auto objective = parseTuneObjective(p.objectiveName.toStdString());
    if (!objective)
        return Status(StatusCode::InvalidArgument,
                      QStringLiteral("--objective must be goodput or throughput, not '%1'")
                          .arg(p.objectiveName)
                          .toStdString());
    s.objective = *objective;
    auto window = parseVerifyWindow(args.value("verify-window", QStringLiteral("busiest:3m")).toStdString());
    if (!window)
        return window.status();
    p.request.verifyWindow = *window;
    auto noise = costNoiseFor(args);
    if (!noise)
        return noise.status();
    s.noise = *noise;
    const auto source = replaySourceFor(args);
    const auto speed = args.number("speed", 1, 1e-6, 1e6);
    const auto lengthScale = args.number("length-scale", 1, 1e-6, 1e3);
    const auto limit = args.number("limit", 0, 0, 1e12);
    const auto budget = args.number("budget", 240, 1, 100000);
    const auto instances = args.number("instances", 2, 1, 16);
    const auto jobs = jobsFor(args);
    if (!source || !speed || !lengthScale || !limit || !budget || !instances || !jobs)
        return Status(StatusCode::InvalidArgument, args.error().toStdString());
    ReplayOptions &ro = p.request.source;
    ro.source = *source;
    auto config = givenConfig(options);
    if (!config)
        return config.status();
    ro.config = *config;
    ro.speed = *speed;
    ro.lengthScale = *lengthScale;
    ro.limit = std::size_t(*limit);
    s.budget = std::size_t(*budget);
    s.maxInstances = int(*instances);
    s.threads = *jobs;
    p.request.verify = !args.has("no-verify");
    return p;
}

// The calibration's model, loaded to verify on.
Result<std::shared_ptr<Backend>> verificationBackend(const AppOptions &options, const Calibration &cal)
{
    AppOptions model = options;
    model.model = q(cal.model);
    if (!cal.preset.empty())
        model.preset = q(cal.preset);
    if (!cal.device.empty())
        model.device = q(cal.device);
    model.threads = cal.threads;
    auto backend = backendFor(model);
    if (!backend)
        return Status(backend.status().code(), "cannot load " + cal.describe() +
                                                   " to verify: " + backend.status().message() +
                                                   " (--no-verify skips the check)");
    return backend;
}

constexpr int kGoOn = -1;

int openSource(const AppOptions &options, CommandArgs &args, const TuneRequest &asked, TuneJob &job)
{
    auto opened = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!opened)
        return fail(q(opened.status().message()));
    job.store = std::move(*opened);
    if (auto source = describeSource(*job.store, asked.source.source); !source)
        return fail(q(source.status().message()));
    job.request = asked;
    if (args.has("target")) {
        auto t = remoteTune(*job.store, options, args);
        if (!t)
            return fail(q(t.status().message()));
        job.remoteTarget = std::move(*t);
        if (!job.request.source.config)
            job.request.source.config = job.remoteTarget->current;
        job.request.verify = false;
    } else if (args.has("apply")) {
        return fail(QStringLiteral("--apply sends the pick to a server: give --target URL"), 2);
    }
    return kGoOn;
}

int chooseModel(const AppOptions &options, CommandArgs &args, const TuneRequest &asked, TuneJob &job)
{
    auto calibration = job.remoteTarget ? Result<Calibration>(job.remoteTarget->calibration)
                                        : calibrationFor(*job.store, options, args);
    if (!calibration)
        return fail(q(calibration.status().message()) +
                    QStringLiteral("\n(a calibration is the cost model the search simulates with: "
                                   "batchpilot calibrate --model M [--preset P] --quick)"));
    job.calibration = *calibration;
    if (job.remoteTarget) {
        job.serverModel = job.remoteTarget->model;
        return kGoOn;
    }
    if (job.calibration.remote && !asked.source.config)
        if (auto why = unknownKindMessage(*job.calibration.remote, "tune"))
            return fail(q(*why), 2);
    auto m =
        serverModelFor(options, job.calibration,
                       args.has("server-config") ? std::optional(args.value("server-config")) : std::nullopt);
    if (!m)
        return fail(q(m.status().message()));
    if (*m) {
        job.serverModel = std::move(**m);
        job.request.source.config = job.serverModel->config;
        job.request.verify = false; // the server is not here to verify on: replay --target does
    }
    return kGoOn;
}

int prepare(const AppOptions &options, CommandArgs &args, const TuneRequest &asked, TuneJob &job)
{
    if (const int code = openSource(options, args, asked, job); code != kGoOn)
        return code;
    if (const int code = chooseModel(options, args, asked, job); code != kGoOn)
        return code;
    if (const auto warning = interferenceWarning(job.calibration))
        QTextStream(stderr) << "warning: " << q(*warning) << "\n";
    if (job.request.verify) {
        auto loaded = verificationBackend(options, job.calibration);
        if (!loaded)
            return fail(q(loaded.status().message()));
        job.backend = *loaded;
    }
    return kGoOn;
}

// Progress once a second, the first after a second (a search that ends
// sooner printed its first count only: "1 simulations of about 336"), and
// the final count when any was shown (finish()).
class SearchProgress {
public:
    explicit SearchProgress(QTextStream &err) : m_err(err) {}
    TuneHooks hooks()
    {
        TuneHooks hooks;
        hooks.searchProgress = [this](std::size_t done, std::size_t total) { searched(done, total); };
        hooks.verifyStarting = [this](const VerifyPlan &plan) { verifying(plan); };
        hooks.verifyProgress = [this](const ReplayProgress &p) {
            m_err << QStringLiteral("verify: %1/%2 done\n").arg(p.finished).arg(p.total);
            m_err.flush();
        };
        return hooks;
    }
    void finish()
    {
        if (!m_shown)
            return;
        m_err << QStringLiteral("tune: %1 simulations done\n").arg(m_simulations);
        m_err.flush();
    }

private:
    void searched(std::size_t done, std::size_t total)
    {
        m_simulations = done;
        const TimePoint now = SteadyClock::now();
        if (now - m_lastShown < std::chrono::seconds(1))
            return;
        m_lastShown = now;
        m_shown = true;
        m_err << QStringLiteral("tune: %1 simulations of about %2\n").arg(done).arg(total);
        m_err.flush();
    }
    void verifying(const VerifyPlan &plan)
    {
        m_err << QStringLiteral(
                     "tune: verifying %1 with a real-clock replay of %2: %3 of %4 requests, %5 s of "
                     "arrivals; expected %6 (Ctrl+C stops it and keeps what was verified; "
                     "--verify-window all replays every arrival, --no-verify skips it)\n")
                     .arg(q(plan.label), q(describe(plan.spec)))
                     .arg(plan.window.size())
                     .arg(plan.sourceRequests)
                     .arg(toSeconds(plan.window.span()), 0, 'f', 1)
                     .arg(durationText(plan.expectedSeconds));
        m_err.flush();
    }

    QTextStream &m_err;
    TimePoint m_lastShown = SteadyClock::now();
    std::size_t m_simulations = 0;
    bool m_shown = false;
};

// The server's current settings (a server model's) predicted and judged
// against the recommendation; the pick is the one that wins.
TuneOutcome judge(const TuneJob &job, const TuneRun &run, const TuneRequest &asked)
{
    const TuneResult &r = run.result;
    const TuneCandidate &rec = r.candidates[*r.recommended];
    TuneOutcome o;
    o.cancelled = r.cancelled || (run.verification && run.verification->partial);
    o.tokenLevel = asked.settings.slo.tokenLevel() || job.calibration.generative;
    if (job.serverModel)
        o.current = job.serverModel->config; // with --target: remoteTarget->current, from the same model
    if (o.current) {
        o.currentFigures = simulationEvaluator(tuneWorkloadFor(run.source, job.calibration, run.settings),
                                               asked.settings.slo)(*o.current, 1.0);
        o.verdict = judgeAgainstCurrent(*o.currentFigures, rec.figures,
                                        fitSpread(job.calibration, o.current->policy).value_or(0.0));
    }
    o.keep = o.verdict && o.verdict->keep;
    o.pick = o.keep ? *o.current : rec.config;
    o.pickLabel = o.keep ? std::string("the server's current settings") : rec.label;
    return o;
}

// --target: the server's settings and the pick stored with the tuning, in
// the server's own syntax for the operator to apply.
int storeTarget(TuneJob &job, TuneRun &run, const TuneOutcome &o)
{
    RemoteTune &t = *job.remoteTarget;
    nlohmann::json &target = run.stored.document["target"];
    target = {{"url", t.options.target.toString().toStdString()},
              {"server", t.calibration.remote->server},
              {"current_config", toJson(t.current)},
              {"current_predicted", tuneFiguresJson(*o.currentFigures)}};
    const TuneCandidate &rec = run.result.candidates[*run.result.recommended];
    if (rec.config.server.kind == ServerKind::BatchPilot)
        return kGoOn;
    const std::string model = t.options.model.toStdString();
    target["current_settings"] = describeConfig(t.current);
    target["current_launch"] = launchText(t.current, model);
    target["recommended_settings"] = describeConfig(o.pick);
    target["recommended_launch"] = launchText(o.pick, model);
    target["keep_current"] = o.keep;
    if (Status s = setTuningTarget(*job.store, run.stored.tuningId, target); !s)
        return fail(QStringLiteral("cannot store the pick: ") + q(s.message()));
    return kGoOn;
}

// --apply: the pick sent to the server, then the same arrivals replayed
// into it (unless --no-verify) and the measured figures stored beside the
// predicted.
int applyAndVerify(CommandArgs &args, TuneJob &job, TuneRun &run, const TuneRequest &asked, TuneOutcome &o,
                   const TuneHooks &hooks, const SigintFlag &sigint)
{
    RemoteTune &t = *job.remoteTarget;
    QTextStream err(stderr);
    if (args.has("apply") && !run.result.cancelled && o.keep) {
        err << QStringLiteral("tune: nothing to apply: the server's current settings stay\n");
    } else if (args.has("apply") && !run.result.cancelled) {
        if (Status s = applyPick(t, o.pick); !s)
            return fail(q(s.message()));
        t.applied = true;
        err << QStringLiteral("tune: applied %1 to %2\n").arg(q(o.pickLabel), t.options.target.toString());
    }
    run.stored.document["target"]["applied"] = t.applied;
    if (!t.applied || !asked.verify)
        return kGoOn;
    ReplayOptions real = job.request.source;
    real.clock = ReplayClock::Real;
    real.config = o.pick;
    real.notes = "tune: verifies " + o.pickLabel + " on " + t.options.target.toString().toStdString();
    real.progressInterval = std::chrono::seconds(2);
    auto outcome = replayOnTarget(job.store, t, real, hooks.verifyProgress, sigint.flag());
    if (!outcome)
        return fail(QStringLiteral("verification replay: ") + q(outcome.status().message()));
    o.verified = *outcome;
    auto m =
        measuredFigures(*job.store, outcome->sessionId, run.source.arrivals().size(), asked.settings.slo);
    if (!m)
        return fail(q(m.status().message()));
    o.measured = *m;
    run.stored.document["verification"] = {{"session_id", o.verified->sessionId},
                                           {"wall_s", o.verified->wallSeconds},
                                           {"cancelled", o.verified->cancelled},
                                           {"measured", tuneFiguresJson(*o.measured)}};
    if (Status s = setTuningVerification(*job.store, run.stored.tuningId, o.verified->sessionId,
                                         run.stored.document["verification"]);
        !s)
        return fail(QStringLiteral("cannot store the verification: ") + q(s.message()));
    o.cancelled = o.cancelled || o.verified->cancelled;
    return kGoOn;
}

// --output FILE: a server model's pick in that server's syntax; BatchPilot's
// as its config JSON.
int writePick(const AppOptions &options, CommandArgs &args, const TuneJob &job, const TuneOutcome &o)
{
    if (!args.has("output"))
        return kGoOn;
    QFile f(args.value("output"));
    const QByteArray text =
        QByteArray::fromStdString(o.pick.server.kind != ServerKind::BatchPilot && job.serverModel
                                      ? launchText(o.pick, options.model.toStdString())
                                      : toJson(o.pick).dump(2) + "\n");
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size())
        return fail(QStringLiteral("cannot write %1: %2").arg(f.fileName(), f.errorString()));
    return kGoOn;
}

} // namespace

int runTune(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("tune"));
    auto parsed = parse(options, args);
    if (!parsed)
        return fail(q(parsed.status().message()), 2);
    TuneJob job;
    if (const int code = prepare(options, args, parsed->request, job); code != kGoOn)
        return code;
    QTextStream err(stderr);
    SearchProgress progress(err);
    SigintFlag sigint;
    TuneHooks hooks = progress.hooks();
    hooks.cancel = sigint.flag();
    auto run = runTunePipeline(job.store, job.calibration, job.request, job.backend, hooks);
    if (!run)
        return fail(q(run.status().message()));
    progress.finish();
    if (!run->result.recommended)
        return fail(QStringLiteral("cancelled before any config was evaluated"), 130);
    TuneOutcome o = judge(job, *run, parsed->request);
    if (job.remoteTarget) {
        if (const int code = storeTarget(job, *run, o); code != kGoOn)
            return code;
        if (const int code = applyAndVerify(args, job, *run, parsed->request, o, hooks, sigint);
            code != kGoOn)
            return code;
    }
    if (const int code = writePick(options, args, job, o); code != kGoOn)
        return code;
    QTextStream out(stdout);
    if (args.has("json"))
        printJson(out, job, *run, o);
    else
        printText(out, options, args, *parsed, job, *run, o);
    return o.cancelled ? 130 : 0;
}

} // namespace bp::app
