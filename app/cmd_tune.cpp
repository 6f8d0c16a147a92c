#include "cmd_tune.h"
#include "cli_text.h"
#include "sigint_flag.h"

#include "cmd_tune_remote.h"
#include "cmd_tune_text.h"

#include "cmd_calibrate.h"
#include "cmd_calibrate_remote.h"
#include "command_args.h"
#include "commands.h"
#include "engine_host.h"
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

// The flags, as a pipeline request (the calibration aside).
struct Parsed {
    TuneRequest request;
    QString objectiveName;
};

Result<Parsed> parse(const AppOptions &options, CommandArgs &args)
{
    auto usage = [](const QString &why) {
        return Status(StatusCode::InvalidArgument, (why + "\n" + kUsage).toStdString());
    };
    if (!args.error().isEmpty())
        return usage(args.error());
    if (!args.positional().isEmpty())
        return usage(QStringLiteral("unexpected '%1'").arg(args.positional().front()));
    if (args.has("trace") == args.has("session"))
        return usage(QStringLiteral("give one of --trace ID or --session ID"));
    if (!args.has("slo"))
        return usage(QStringLiteral("--slo is required, e.g. --slo 'p99<=200ms'"));
    Parsed p;
    TuneSettings &s = p.request.settings;
    auto slo = parseTuneSlo(args.value("slo").toStdString());
    if (!slo)
        return slo.status();
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
    const auto sourceId = args.number(args.has("trace") ? "trace" : "session", 0, 1, 9e18);
    const auto speed = args.number("speed", 1, 1e-6, 1e6);
    const auto lengthScale = args.number("length-scale", 1, 1e-6, 1e3);
    const auto limit = args.number("limit", 0, 0, 1e12);
    const auto budget = args.number("budget", 240, 1, 100000);
    const auto instances = args.number("instances", 2, 1, 16);
    const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
    const auto jobs = args.number("jobs", std::min(cores, 16), 1, 16);
    if (!sourceId || !speed || !lengthScale || !limit || !budget || !instances || !jobs)
        return Status(StatusCode::InvalidArgument, args.error().toStdString());
    ReplayOptions &ro = p.request.source;
    ro.source = {args.has("trace") ? ReplaySource::Kind::Trace : ReplaySource::Kind::Session,
                 std::int64_t(*sourceId)};
    if (!options.config.isEmpty()) {
        auto config = batchingConfigFor(options);
        if (!config)
            return config.status();
        ro.config = *config;
    }
    ro.speed = *speed;
    ro.lengthScale = *lengthScale;
    ro.limit = std::size_t(*limit);
    s.budget = std::size_t(*budget);
    s.maxInstances = int(*instances);
    s.threads = int(*jobs);
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

} // namespace

int runTune(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("tune"));
    auto parsed = parse(options, args);
    if (!parsed)
        return fail(q(parsed.status().message()), 2);
    const TuneRequest &request = parsed->request;

    auto opened = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!opened)
        return fail(q(opened.status().message()));
    const std::shared_ptr<TraceStore> store = std::move(*opened);
    if (auto source = describeSource(*store, request.source.source); !source)
        return fail(q(source.status().message()));
    // --target: the server's remote calibration, its current settings the base;
    // it is verified on the server itself, after --apply (not by the pipeline).
    std::optional<RemoteTune> remoteTarget;
    TuneRequest remoteRequest;
    if (args.has("target")) {
        auto t = remoteTune(*store, options, args);
        if (!t)
            return fail(q(t.status().message()));
        remoteTarget = std::move(*t);
        remoteRequest = request;
        if (!remoteRequest.source.config)
            remoteRequest.source.config = remoteTarget->current;
        remoteRequest.verify = false;
    } else if (args.has("apply")) {
        return fail(QStringLiteral("--apply sends the pick to a server: give --target URL"), 2);
    }
    auto calibration =
        remoteTarget ? Result<Calibration>(remoteTarget->calibration) : calibrationFor(*store, options, args);
    if (!calibration)
        return fail(q(calibration.status().message()) +
                    QStringLiteral("\n(a calibration is the cost model the search simulates with: "
                                   "batchpilot calibrate --model M [--preset P] --quick)"));
    // A remote calibration of a vLLM, TGI, SGLang or Triton server without
    // --target: that server's scheduler model, its settings from
    // --server-config, the calibration's reading and the probe's caps.
    std::optional<RemoteServerModel> serverModel;
    if (!remoteTarget && calibration->remote && !request.source.config)
        if (auto why = unknownKindMessage(*calibration->remote, "tune"))
            return fail(q(*why), 2);
    if (remoteTarget) {
        serverModel = remoteTarget->model;
    } else if (calibration->remote && simulatesServerModel(*calibration->remote) && !request.source.config) {
        std::optional<ServerSettings> given;
        if (args.has("server-config")) {
            auto file = settingsFromFile(args.value("server-config"));
            if (!file)
                return fail(q(file.status().message()));
            given = *file;
        }
        auto m = remoteServerModel(*calibration->remote, given ? &*given : nullptr);
        if (!m)
            return fail(q(m.status().message()));
        serverModel = *m;
        remoteRequest = request;
        remoteRequest.source.config = m->config;
        remoteRequest.verify = false; // the server is not here to verify on: replay --target does
    }
    const TuneRequest &req = remoteTarget || serverModel ? remoteRequest : request;
    QTextStream err(stderr);
    if (const auto warning = interferenceWarning(*calibration))
        err << "warning: " << q(*warning) << "\n";
    std::shared_ptr<Backend> backend;
    if (req.verify) {
        auto loaded = verificationBackend(options, *calibration);
        if (!loaded)
            return fail(q(loaded.status().message()));
        backend = *loaded;
    }

    // Progress once a second, the first after a second (a search that ends
    // sooner printed its first count only: "1 simulations of about 336"),
    // and the final count when any was shown.
    TimePoint lastShown = SteadyClock::now();
    std::size_t simulations = 0;
    bool shown = false;
    TuneHooks hooks;
    hooks.searchProgress = [&](std::size_t done, std::size_t total) {
        simulations = done;
        const TimePoint now = SteadyClock::now();
        if (now - lastShown < std::chrono::seconds(1))
            return;
        lastShown = now;
        shown = true;
        err << QStringLiteral("tune: %1 simulations of about %2\n").arg(done).arg(total);
        err.flush();
    };
    hooks.verifyStarting = [&](const VerifyPlan &plan) {
        err << QStringLiteral("tune: verifying %1 with a real-clock replay of %2: %3 of %4 requests, %5 s of "
                              "arrivals; expected %6 (Ctrl+C stops it and keeps what was verified; "
                              "--verify-window all replays every arrival, --no-verify skips it)\n")
                   .arg(q(plan.label), q(describe(plan.spec)))
                   .arg(plan.window.size())
                   .arg(plan.sourceRequests)
                   .arg(toSeconds(plan.window.span()), 0, 'f', 1)
                   .arg(durationText(plan.expectedSeconds));
        err.flush();
    };
    hooks.verifyProgress = [&](const ReplayProgress &p) {
        err << QStringLiteral("verify: %1/%2 done\n").arg(p.finished).arg(p.total);
        err.flush();
    };
    SigintFlag sigint;
    hooks.cancel = sigint.flag();
    auto run = runTunePipeline(store, *calibration, req, backend, hooks);
    if (!run)
        return fail(q(run.status().message()));
    if (shown) {
        err << QStringLiteral("tune: %1 simulations done\n").arg(simulations);
        err.flush();
    }
    const TuneResult &r = run->result;
    if (!r.recommended)
        return fail(QStringLiteral("cancelled before any config was evaluated"), 130);
    const TuneCandidate &rec = r.candidates[*r.recommended];
    bool cancelled = r.cancelled || (run->verification && run->verification->partial);
    const bool tokenLevel = request.settings.slo.tokenLevel() || calibration->generative;

    // A remote target: the server's current settings predicted beside the
    // pick; --apply sends it, then the same arrivals are replayed into the
    // server and the measured figures stored beside the predicted.
    std::optional<TuneFigures> currentFigures, measured;
    std::optional<ReplayOutcome> verified;
    // A server's current settings against the pick: a change only when it is
    // better by more than the fit can tell (judgeAgainstCurrent, tuner.h).
    std::optional<CurrentVerdict> verdict;
    std::optional<BatchingConfig> current;
    if (serverModel)
        current = serverModel->config; // with --target: remoteTarget->current, from the same model
    if (current) {
        currentFigures = simulationEvaluator(tuneWorkloadFor(run->source, *calibration, run->settings),
                                             request.settings.slo)(*current, 1.0);
        verdict = judgeAgainstCurrent(*currentFigures, rec.figures,
                                      fitSpread(*calibration, current->policy).value_or(0.0));
    }
    const bool keep = verdict && verdict->keep;
    const BatchingConfig &pick = keep ? *current : rec.config;
    const std::string pickLabel = keep ? std::string("the server's current settings") : rec.label;
    if (remoteTarget) {
        run->stored.document["target"] = {{"url", remoteTarget->options.target.toString().toStdString()},
                                          {"server", remoteTarget->calibration.remote->server},
                                          {"current_config", toJson(remoteTarget->current)},
                                          {"current_predicted", tuneFiguresJson(*currentFigures)}};
        if (rec.config.server.kind != ServerKind::BatchPilot) {
            // The server's own syntax, for the operator to apply and the store to keep.
            const std::string model = remoteTarget->options.model.toStdString();
            run->stored.document["target"]["current_settings"] = describeConfig(remoteTarget->current);
            run->stored.document["target"]["current_launch"] = launchText(remoteTarget->current, model);
            run->stored.document["target"]["recommended_settings"] = describeConfig(pick);
            run->stored.document["target"]["recommended_launch"] = launchText(pick, model);
            run->stored.document["target"]["keep_current"] = keep;
            if (Status s = setTuningTarget(*store, run->stored.tuningId, run->stored.document["target"]); !s)
                return fail(QStringLiteral("cannot store the pick: ") + q(s.message()));
        }
        if (args.has("apply") && !r.cancelled && keep) {
            err << QStringLiteral("tune: nothing to apply: the server's current settings stay\n");
        } else if (args.has("apply") && !r.cancelled) {
            if (Status s = applyPick(*remoteTarget, pick); !s)
                return fail(q(s.message()));
            remoteTarget->applied = true;
            err << QStringLiteral("tune: applied %1 to %2\n")
                       .arg(q(pickLabel), remoteTarget->options.target.toString());
        }
        run->stored.document["target"]["applied"] = remoteTarget->applied;
        if (remoteTarget->applied && request.verify) {
            ReplayOptions real = req.source;
            real.clock = ReplayClock::Real;
            real.config = pick;
            real.notes = "tune: verifies " + pickLabel + " on " +
                         remoteTarget->options.target.toString().toStdString();
            real.progressInterval = std::chrono::seconds(2);
            auto outcome = replayOnTarget(store, *remoteTarget, real, hooks.verifyProgress, sigint.flag());
            if (!outcome)
                return fail(QStringLiteral("verification replay: ") + q(outcome.status().message()));
            verified = *outcome;
            auto m = measuredFigures(*store, outcome->sessionId, run->source.arrivals().size(),
                                     request.settings.slo);
            if (!m)
                return fail(q(m.status().message()));
            measured = *m;
            run->stored.document["verification"] = {{"session_id", verified->sessionId},
                                                    {"wall_s", verified->wallSeconds},
                                                    {"cancelled", verified->cancelled},
                                                    {"measured", tuneFiguresJson(*measured)}};
            if (Status s = setTuningVerification(*store, run->stored.tuningId, verified->sessionId,
                                                 run->stored.document["verification"]);
                !s)
                return fail(QStringLiteral("cannot store the verification: ") + q(s.message()));
            cancelled = cancelled || verified->cancelled;
        }
    }

    if (args.has("output")) {
        QFile f(args.value("output"));
        // A server model's pick in that server's syntax; BatchPilot's as its config JSON.
        const QByteArray text =
            QByteArray::fromStdString(pick.server.kind != ServerKind::BatchPilot && serverModel
                                          ? launchText(pick, options.model.toStdString())
                                          : toJson(pick).dump(2) + "\n");
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text) != text.size())
            return fail(QStringLiteral("cannot write %1: %2").arg(f.fileName(), f.errorString()));
    }

    QTextStream out(stdout);
    // How much of the prompt a prefix cache could serve (hash ids, conversations): before the search's table.
    const PrefixShare share = run->source.prefixShare();
    if (args.has("json")) {
        nlohmann::json j = run->stored.document;
        j["reusable_prefix"] = {{"prompt_tokens", share.promptTokens},
                                {"reusable_tokens", share.reusableTokens},
                                {"share", share.share()}};
        nlohmann::json candidates = nlohmann::json::array();
        for (const TuneCandidate &c : r.candidates)
            candidates.push_back({{"label", c.label},
                                  {"config", toJson(c.config)},
                                  {"predicted", tuneFiguresJson(c.figures)},
                                  {"pareto", c.pareto}});
        j["candidates"] = candidates;
        j["pareto"] = r.pareto;
        if (run->interval)
            j["recommended"]["interval"] = simulatedIntervalJson(*run->interval, *calibration);
        if (verdict)
            j["current"] = {
                {"config", toJson(*current)},
                {"predicted", tuneFiguresJson(*currentFigures)},
                {"meets_slo", verdict->currentMeets},
                {"keep", verdict->keep},
                {"gain", std::isfinite(verdict->gain) ? nlohmann::json(verdict->gain) : nlohmann::json()},
                {"margin", verdict->margin},
                {"settings", serverModel->describe()}};
        out << q(j.dump(2)) << "\n";
        return cancelled ? 130 : 0;
    }

    const QString baseName = serverModel && options.config.isEmpty() ? QStringLiteral("server's current")
                             : request.source.config                 ? QStringLiteral("--config")
                             : request.source.source.kind == ReplaySource::Kind::Session
                                 ? QStringLiteral("session's")
                                 : QStringLiteral("default");
    out << QStringLiteral("Reusable prefix: %1% of %2 prompt tokens are in blocks seen before%3\n")
               .arg(100.0 * share.share(), 0, 'f', 1)
               .arg(share.promptTokens)
               .arg(share.reusableTokens ? QString() : QStringLiteral(" (no hash ids or conversations)"));
    if (serverModel && options.config.isEmpty())
        out << QStringLiteral("Server model: %1's scheduler; its settings: %2\n")
                   .arg(q(serverModel->server), q(serverModel->describe()));
    printSearch(out, *run, parsed->objectiveName, baseName, request.settings.noise,
                verdict ? &*verdict : nullptr, currentFigures ? &*currentFigures : nullptr);
    if (run->interval)
        out << "  " << q(describeSpread(*run->interval)) << "\n  " << q(narrowIntervalHint(*calibration))
            << "\n";
    if (const std::string w = run->source.extrapolationWarning(*calibration); !w.empty())
        out << "  warning: " << q(w) << "\n";
    if (args.has("output"))
        out << QStringLiteral(
                   "  written to %1 (apply: batchpilot --headless --config %1, or PUT /v1/config)\n")
                   .arg(args.value("output"));
    if (remoteTarget)
        printRemotePick(out, *remoteTarget, pick, keep ? *currentFigures : rec.figures, *currentFigures,
                        tokenLevel);
    if (run->verification) {
        printVerification(out, *run->verification, tokenLevel);
    } else if (verified) {
        out << QStringLiteral(
                   "\nVerification: real-clock replay on the server, session %1, %2 s wall time%3\n")
                   .arg(verified->sessionId)
                   .arg(verified->wallSeconds, 0, 'f', 1)
                   .arg(verified->cancelled ? QStringLiteral(" (cancelled)") : QString());
        printVerification(out, rec.figures, *measured, tokenLevel);
    } else if (remoteTarget && !remoteTarget->applied && request.verify) {
        out << QStringLiteral(
            "\nNot verified: --apply sends the pick to the server, then the same arrivals are "
            "replayed into it.\n");
    } else if (request.verify)
        out << QStringLiteral("\nNot verified (the search was cancelled).\n");
    out << QStringLiteral("\nStored as tuning %1").arg(run->stored.tuningId);
    if (run->verification || verified)
        out << QStringLiteral("; its report: batchpilot report %1 -o tuned.html")
                   .arg(verified ? verified->sessionId : run->verification->replay.sessionId);
    out << "\n";
    return cancelled ? 130 : 0;
}

} // namespace bp::app
