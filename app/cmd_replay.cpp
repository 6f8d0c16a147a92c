// batchpilot replay ID: re-drives a recorded session (or, with --trace, an
// imported trace) into a fresh engine built from the common --model /
// --device / --preset flags and --config (default: the source session's
// last config), records it as a new session, and prints the comparison.
#include "cli_text.h"
#include "cmd_store.h"
#include "replay_command.h"
#include "sigint_flag.h"

#include "cmd_calibrate.h"

#include "command_args.h"
#include "commands.h"
#include "engine_host.h"

#include "remote/http_remote_target.h"
#include "remote/settings_fetch.h"

#include "engine/config/config_json.h"
#include "engine/core/length_rule.h"
#include "engine/replay/replayer.h"
#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/calibration/remote_server_model.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/store/session_summary.h"

#include <QTextStream>

#include <atomic>

namespace bp::app {

using namespace replay_command;

namespace {

int fail(const QString &message, int code = 1)
{
    return failCommand(QStringLiteral("replay"), message, code);
}

constexpr const char *kUsage =
    "usage: batchpilot replay ID [--trace] [--speed X] [--length-scale S] [--limit N] [--config FILE] "
    "[--virtual | --simulate [--calibration ID|FILE] [--noise none|mean|drawn] [--replicas N] [--router P]] "
    "[--no-clamp] [--compare "
    "SESSION] [--notes TEXT] [--json]\n"
    "       batchpilot replay ID --target URL[,URL...] [--router P] --model NAME [--protocol "
    "oip|openai|openai-chat] [--token T] "
    "[--max-concurrency N] [--max-queued N] [--timeout MS] [--scrape-interval MS] [--metrics-url URL] "
    "[--max-new-tokens N] "
    "...";

// The remote target from the command line; nullopt (and `error`) when a
// flag is wrong.
std::unique_ptr<remote::HttpRemoteTarget> remoteTargetFor(const AppOptions &options, CommandArgs &args,
                                                          QString &error)
{
    remote::RemoteOptions ro;
    // One URL, or a fleet: "URL1,URL2,..." behind --router (docs/remote.md).
    if (Status s = remote::setTargets(ro, args.value("target"), args.value("router")); !s) {
        error = q(s.message());
        return nullptr;
    }
    const QString protocol = args.value("protocol", QStringLiteral("oip"));
    const auto parsed = remote::parseProtocol(protocol);
    if (!parsed) {
        error =
            QStringLiteral("--protocol must be one of %1, not '%2'").arg(remote::protocolNames(), protocol);
        return nullptr;
    }
    ro.protocol = *parsed;
    if (!options.modelGiven) {
        error = QStringLiteral("a remote replay needs --model NAME: the model's name on the server");
        return nullptr;
    }
    ro.model = options.model;
    ro.token = options.token;
    const auto concurrency = args.number("max-concurrency", 64, 1, 16384);
    const auto maxQueued = args.number("max-queued", remote::RemoteOptions{}.maxQueued, 0, 1e7);
    const auto timeout = args.number("timeout", 60000, 0, 86400000);
    const auto scrape = args.number("scrape-interval", 1000, 0, 86400000);
    const auto maxNew = args.number("max-new-tokens", 0, 0, 1e7);
    if (!concurrency || !maxQueued || !timeout || !scrape || !maxNew) {
        error = args.error();
        return nullptr;
    }
    ro.maxConcurrency = int(*concurrency);
    ro.maxQueued = int(*maxQueued);
    ro.timeout = std::chrono::milliseconds(qint64(*timeout));
    ro.scrapeInterval = std::chrono::milliseconds(qint64(*scrape));
    if (args.has("metrics-url"))
        ro.metricsUrl = QUrl(args.value("metrics-url"));
    ro.maxNewTokens = int(*maxNew);
    if (options.vocabSize > 0)
        ro.vocabSize = options.vocabSize;
    if (options.maxLength > 0)
        ro.maxInputTokens = options.maxLength;
    // The server's kind, as calibrate reads it: its requests then carry
    // what the probe's did, so each answer runs to the trace's length.
    std::string from;
    ro.server = remote::detectKind(ro, from);
    QTextStream err(stderr);
    if (ro.server.empty())
        err << QStringLiteral(
                   "replay: the server's kind is not recognised from /metrics or GET /props: plain "
                   "%1 bodies (an answer may end before the trace's output length)\n")
                   .arg(remote::protocolName(ro.protocol));
    else if (const std::string d = remote::describe(remote::dialectFor(ro.server), ro.protocol); !d.empty())
        err << QStringLiteral("replay: server %1 (from %2): its requests carry %3\n")
                   .arg(q(ro.server), q(from), q(d));
    err.flush();
    auto target = remote::HttpRemoteTarget::create(ro);
    if (!target) {
        error = q(target.status().message());
        return nullptr;
    }
    return std::move(target.value());
}

constexpr int kGoOn = -1;

int parseNumbers(CommandArgs &args, ReplayFlags &f)
{
    if (!args.error().isEmpty())
        return fail(args.error() + "\n" + kUsage, 2);
    if (args.positional().size() != 1)
        return fail(kUsage, 2);
    bool ok = false;
    f.id = args.positional().front().toLongLong(&ok);
    if (!ok || f.id <= 0)
        return fail(QStringLiteral("'%1' is not a session or trace id").arg(args.positional().front()), 2);
    const auto speed = args.number("speed", 1, 1e-6, 1e6);
    const auto lengthScale = args.number("length-scale", 1, 1e-6, 1e3);
    const auto limit = args.number("limit", 0, 0, 1e12);
    const auto compare = args.number("compare", 0, 1, 9e18);
    if (!speed || !lengthScale || !limit || !compare)
        return fail(args.error(), 2);
    f.speed = *speed;
    f.lengthScale = *lengthScale;
    f.limit = *limit;
    f.compare = *compare;
    return kGoOn;
}

int parseFlags(CommandArgs &args, ReplayFlags &f)
{
    if (const int code = parseNumbers(args, f); code != kGoOn)
        return code;
    f.simulate = args.has("simulate");
    if (f.simulate && args.has("virtual"))
        return fail(QStringLiteral("--virtual and --simulate exclude each other\n") + kUsage, 2);
    if (args.has("calibration") && !f.simulate)
        return fail(QStringLiteral("--calibration needs --simulate\n") + kUsage, 2);
    if (args.has("noise") && !f.simulate)
        return fail(QStringLiteral("--noise needs --simulate\n") + kUsage, 2);
    auto noise = costNoiseFor(args);
    if (!noise)
        return fail(q(noise.status().message()), 2);
    f.noise = *noise;
    const auto replicas = args.number("replicas", 1, 1, 256);
    if (!replicas)
        return fail(args.error(), 2);
    f.replicas = *replicas;
    const auto router =
        parseRouterPolicy(args.value("router", QStringLiteral("least-outstanding")).toStdString());
    if (!router)
        return fail(
            QStringLiteral("--router must be round-robin, least-outstanding, least-kv or prefix-affinity"),
            2);
    f.router = *router;
    if (args.has("replicas") && !f.simulate)
        return fail(QStringLiteral("--replicas needs --simulate (a remote fleet's replicas are its --target "
                                   "URLs)\n") +
                        kUsage,
                    2);
    if (args.has("router") && !f.simulate && !args.has("target"))
        return fail(QStringLiteral("--router needs --simulate or --target URL1,URL2\n") + kUsage, 2);
    return kGoOn;
}

// The source (and --compare's session) must exist before a model is loaded
// (which can take a while); the replay's options from the flags.
int openSource(const AppOptions &options, CommandArgs &args, const ReplayFlags &f, TraceStore &store,
               ReplayOptions &ro)
{
    ro.source = {args.has("trace") ? ReplaySource::Kind::Trace : ReplaySource::Kind::Session, f.id};
    if (ro.source.kind == ReplaySource::Kind::Trace) {
        if (auto t = store.trace(f.id); !t)
            return fail(q(t.status().message()));
    } else if (auto s = store.session(f.id); !s) {
        return fail(q(s.status().message()));
    }
    if (f.compare > 0)
        if (auto s = store.session(std::int64_t(f.compare)); !s)
            return fail(q(s.status().message()));
    if (!options.config.isEmpty()) {
        auto config = batchingConfigFor(options);
        if (!config)
            return fail(q(config.status().message()));
        ro.config = *config;
    }
    ro.speed = f.speed;
    ro.lengthScale = f.lengthScale;
    ro.limit = std::size_t(f.limit);
    ro.clock = f.simulate            ? ReplayClock::Simulated
               : args.has("virtual") ? ReplayClock::Virtual
                                     : ReplayClock::Real;
    ro.clampToModel = !args.has("no-clamp");
    ro.notes = args.value("notes").toStdString();
    ro.progressInterval = std::chrono::seconds(1);
    return kGoOn;
}

int chooseSimulation(const AppOptions &options, CommandArgs &args, TraceStore &store, ReplayOptions &ro,
                     Driver &d)
{
    auto c = calibrationFor(store, options, args);
    if (!c)
        return fail(q(c.status().message()));
    d.calibration = *c;
    if (const auto warning = interferenceWarning(*d.calibration))
        QTextStream(stderr) << "warning: " << q(*warning) << "\n";
    // A remote calibration of a vLLM, TGI, SGLang or Triton server:
    // simulate that server's scheduler (engine/sim/calibration/remote_server_model.h).
    const RemoteCalibration *remote = d.calibration->remote ? &*d.calibration->remote : nullptr;
    if (remote && !options.config.isEmpty() && unknownKindMessage(*remote, "replay --simulate"))
        d.serverModel =
            "the server's kind is not known: simulated with the scheduler --config gives (assumed, "
            "not inferred)";
    else if (remote) {
        if (auto why = unknownKindMessage(*remote, "replay --simulate"))
            return fail(q(*why), 2);
    }
    auto m = serverModelFor(options, *d.calibration);
    if (!m)
        return fail(q(m.status().message()));
    if (*m) {
        ro.config = (*m)->config;
        d.serverModel = (*m)->server + "'s scheduler; its settings: " + (*m)->describe();
    }
    return kGoOn;
}

int chooseDriver(const AppOptions &options, CommandArgs &args, const ReplayFlags &f, TraceStore &store,
                 ReplayOptions &ro, Driver &d)
{
    const bool isRemote = args.has("target");
    for (const char *flag : {"protocol", "max-concurrency", "max-queued", "timeout", "scrape-interval",
                             "metrics-url", "max-new-tokens"})
        if (!isRemote && args.has(flag))
            return fail(QStringLiteral("--%1 applies to a remote replay (--target URL)").arg(flag), 2);
    if (isRemote && f.simulate)
        return fail(
            QStringLiteral("--simulate simulates the embedded engine; a remote replay runs in real time"), 2);
    if (f.simulate)
        return chooseSimulation(options, args, store, ro, d);
    if (isRemote) {
        if (args.has("virtual"))
            return fail(
                QStringLiteral("--virtual simulates the embedded engine; a remote replay runs in real time"),
                2);
        // --config: only its goodput.* bounds apply (the yardstick of the
        // session's goodput); the server keeps its own batching settings.
        QString error;
        d.target = remoteTargetFor(options, args, error);
        if (!d.target)
            return fail(error, 2);
        return kGoOn;
    }
    auto b = backendFor(options);
    if (!b)
        return fail(q(b.status().message()));
    d.backend = *b;
    return kGoOn;
}

Result<Summaries> summaries(TraceStore &store, const ReplayFlags &f, const ReplayOptions &ro,
                            std::int64_t sessionId)
{
    auto replayed = store.summary(sessionId);
    if (!replayed)
        return replayed.status();
    Summaries s{*replayed, std::nullopt};
    const std::int64_t baselineId =
        f.compare > 0 ? std::int64_t(f.compare) : (ro.source.kind == ReplaySource::Kind::Session ? f.id : 0);
    if (baselineId > 0) {
        auto b = store.summary(baselineId);
        if (!b)
            return b.status();
        s.baseline = *b;
    }
    return s;
}

} // namespace

int runReplay(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("replay"));
    ReplayFlags f;
    if (const int code = parseFlags(args, f); code != kGoOn)
        return code;
    auto store = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!store)
        return fail(q(store.status().message()));
    ReplayOptions ro;
    if (const int code = openSource(options, args, f, **store, ro); code != kGoOn)
        return code;
    Driver d;
    if (const int code = chooseDriver(options, args, f, **store, ro, d); code != kGoOn)
        return code;

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
    SigintFlag sigint;
    Replayer replayer(*store, d.backend);
    std::optional<SimulatedReplay> simulated;
    if (f.simulate) {
        simulated.emplace(*store, *d.calibration);
        simulated->setCostNoise(f.noise);
        simulated->setFleet(int(f.replicas), {f.router, int(f.replicas)});
    }
    auto outcome = f.simulate ? simulated->run(ro, progress, sigint.flag())
                   : d.target ? replayer.runRemote(ro, *d.target, progress, sigint.flag())
                              : replayer.run(ro, progress, sigint.flag());
    if (!outcome)
        return fail(q(outcome.status().message()));
    auto s = summaries(**store, f, ro, outcome->sessionId);
    if (!s)
        return fail(q(s.status().message()));
    QTextStream out(stdout);
    const SimulatedReplay *sim = simulated ? &*simulated : nullptr;
    if (args.has("json"))
        printJson(out, args, f, d, sim, *outcome, *s);
    else
        printText(out, args, f, ro, d, sim, *outcome, *s);
    return outcome->cancelled ? 130 : 0;
}

} // namespace bp::app
