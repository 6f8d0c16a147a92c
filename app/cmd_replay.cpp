// batchpilot replay ID: re-drives a recorded session (or, with --trace, an
// imported trace) into a fresh engine built from the common --model /
// --device / --preset flags and --config (default: the source session's
// last config), records it as a new session, and prints the comparison.
#include "cli_text.h"
#include "cmd_store.h"
#include "sigint_flag.h"

#include "cmd_calibrate.h"

#include "command_args.h"
#include "commands.h"
#include "engine_host.h"

#include "remote/http_remote_target.h"

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
    auto target = remote::HttpRemoteTarget::create(ro);
    if (!target) {
        error = q(target.status().message());
        return nullptr;
    }
    return std::move(target.value());
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
    if (args.has("noise") && !simulate)
        return fail(QStringLiteral("--noise needs --simulate\n") + kUsage, 2);
    auto noise = costNoiseFor(args);
    if (!noise)
        return fail(q(noise.status().message()), 2);
    const auto replicas = args.number("replicas", 1, 1, 256);
    if (!replicas)
        return fail(args.error(), 2);
    const auto router =
        parseRouterPolicy(args.value("router", QStringLiteral("least-outstanding")).toStdString());
    if (!router)
        return fail(
            QStringLiteral("--router must be round-robin, least-outstanding, least-kv or prefix-affinity"),
            2);
    if (args.has("replicas") && !simulate)
        return fail(QStringLiteral("--replicas needs --simulate (a remote fleet's replicas are its --target "
                                   "URLs)\n") +
                        kUsage,
                    2);
    if (args.has("router") && !simulate && !args.has("target"))
        return fail(QStringLiteral("--router needs --simulate or --target URL1,URL2\n") + kUsage, 2);

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
    ro.clock = simulate              ? ReplayClock::Simulated
               : args.has("virtual") ? ReplayClock::Virtual
                                     : ReplayClock::Real;
    ro.clampToModel = !args.has("no-clamp");
    ro.notes = args.value("notes").toStdString();
    ro.progressInterval = std::chrono::seconds(1);

    const bool isRemote = args.has("target");
    for (const char *flag : {"protocol", "max-concurrency", "max-queued", "timeout", "scrape-interval",
                             "metrics-url", "max-new-tokens"})
        if (!isRemote && args.has(flag))
            return fail(QStringLiteral("--%1 applies to a remote replay (--target URL)").arg(flag), 2);
    if (isRemote && simulate)
        return fail(
            QStringLiteral("--simulate simulates the embedded engine; a remote replay runs in real time"), 2);
    std::unique_ptr<remote::HttpRemoteTarget> target;
    std::shared_ptr<Backend> backend;
    // A simulation loads no model: its calibration has the model's facts.
    std::optional<Calibration> calibration;
    std::string serverModel; // the server model a remote calibration simulates, described
    if (simulate) {
        auto c = calibrationFor(**store, options, args);
        if (!c)
            return fail(q(c.status().message()));
        calibration = *c;
        if (const auto warning = interferenceWarning(*calibration))
            QTextStream(stderr) << "warning: " << q(*warning) << "\n";
        // A remote calibration of a vLLM, TGI, SGLang or Triton server:
        // simulate that server's scheduler (engine/sim/calibration/remote_server_model.h).
        if (calibration->remote && !options.config.isEmpty() &&
            unknownKindMessage(*calibration->remote, "replay --simulate"))
            serverModel =
                "the server's kind is not known: simulated with the scheduler --config gives (assumed, "
                "not inferred)";
        else if (calibration->remote) {
            if (auto why = unknownKindMessage(*calibration->remote, "replay --simulate"))
                return fail(q(*why), 2);
        }
        if (calibration->remote && simulatesServerModel(*calibration->remote) && options.config.isEmpty()) {
            auto m = remoteServerModel(*calibration->remote, nullptr);
            if (!m)
                return fail(q(m.status().message()));
            ro.config = m->config;
            serverModel = m->server + "'s scheduler; its settings: " + m->describe();
        }
    } else if (isRemote) {
        if (args.has("virtual"))
            return fail(
                QStringLiteral("--virtual simulates the embedded engine; a remote replay runs in real time"),
                2);
        // --config: only its goodput.* bounds apply (the yardstick of the
        // session's goodput); the server keeps its own batching settings.
        QString error;
        target = remoteTargetFor(options, args, error);
        if (!target)
            return fail(error, 2);
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
    SigintFlag sigint;
    Replayer replayer(*store, backend);
    std::optional<SimulatedReplay> simulated;
    if (simulate) {
        simulated.emplace(*store, *calibration);
        simulated->setCostNoise(*noise);
        simulated->setFleet(int(*replicas), {*router, int(*replicas)});
    }
    auto outcome = simulate ? simulated->run(ro, progress, sigint.flag())
                   : target ? replayer.runRemote(ro, *target, progress, sigint.flag())
                            : replayer.run(ro, progress, sigint.flag());
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
                         {"raised", o.raised},
                         {"cancelled", o.cancelled},
                         {"wall_s", o.wallSeconds},
                         {"max_lateness_us", toMicros(o.maxLateness)},
                         {"logging_warning", o.warning}};
        if (target) {
            j.erase("config");
            j["target"] = target->describe();
            j["client"] = o.client;
        }
        if (calibration)
            j["calibration"] = {{"id", calibration->id},
                                {"describe", calibration->describe()},
                                {"batch_fit_error", toJson(calibration->batchError)}};
        if (simulated && simulated->interval())
            j["interval"] = simulatedIntervalJson(*simulated->interval(), *calibration);
        if (!serverModel.empty())
            j["server_model"] = serverModel;
        j["comparison"] =
            baseline ? comparisonJson(*baseline, *replayed) : nlohmann::json{{"b", toJson(*replayed)}};
        out << q(j.dump(2)) << "\n";
    } else {
        out << QStringLiteral("%1 session %2 (%3 of %4 %5, %6 clock): %7 requests in %8 s wall time\n")
                   .arg(target ? "remote" : "replay")
                   .arg(o.sessionId)
                   .arg(o.cancelled ? "cancelled replay" : "replay")
                   .arg(args.has("trace") ? "trace" : "session")
                   .arg(id)
                   .arg(q(std::string(replayClockName(ro.clock))))
                   .arg(o.submitted)
                   .arg(o.wallSeconds, 0, 'f', 2);
        if (calibration)
            out << QStringLiteral(
                       "  calibration %1: %2; its fit to whole batches: median error %3%, worst %4%\n")
                       .arg(calibration->id)
                       .arg(q(calibration->describe()))
                       .arg(100 * calibration->batchError.medianRel, 0, 'f', 1)
                       .arg(100 * calibration->batchError.maxRel, 0, 'f', 1);
        if (!serverModel.empty())
            out << "  server model: " << q(serverModel) << "\n";
        // The length rule's changes (engine/core/length_rule.h).
        const int maxLength = target        ? target->model().maxSequenceLength
                              : calibration ? calibration->maxSequenceLength
                              : backend     ? backend->info().maxSequenceLength
                                            : 0;
        if (const std::string lengths = LengthCounts{o.raised, o.clamped}.describe(maxLength);
            !lengths.empty())
            out << "  lengths: " << q(lengths) << "\n";
        if (ro.clock == ReplayClock::Real)
            out << QStringLiteral("  submissions were at most %1 ms late\n")
                       .arg(toMicros(o.maxLateness) / 1000, 0, 'f', 2);
        if (!o.warning.empty())
            out << "  warning: " << q(o.warning) << "\n";
        if (simulated && simulated->interval())
            out << "  " << q(describeSpread(*simulated->interval())) << "\n  "
                << q(narrowIntervalHint(*calibration)) << "\n";
        if (target) {
            out << QStringLiteral("  target %1 (%2), HTTP statuses %3\n")
                       .arg(q(target->url()), q(o.client.value("protocol", std::string())),
                            q(o.client.value("http_status", nlohmann::json::object()).dump()));
            if (const std::string server = o.client.value("server", std::string()); !server.empty())
                out << QStringLiteral("  scraped %1 /metrics %2 times (%3 failed)\n")
                           .arg(q(server))
                           .arg(o.client.value("scrapes", 0))
                           .arg(o.client.value("scrape_errors", 0));
            if (const auto fleet = o.client.find("fleet"); fleet != o.client.end())
                for (const nlohmann::json &r : fleet->value("replica_figures", nlohmann::json::array()))
                    out << QStringLiteral("  %1 replica %2 %3: %4 routed, %5 completed, %6 failed, peak %7 "
                                          "outstanding\n")
                               .arg(q(fleet->value("router", std::string())))
                               .arg(r.value("replica", 0))
                               .arg(q(r.value("url", std::string())))
                               .arg(r.value("routed", 0))
                               .arg(r.value("completed", 0))
                               .arg(r.value("failed", 0))
                               .arg(r.value("peak_outstanding", 0));
        }
        out << "\n" << q(baseline ? formatComparison(*baseline, *replayed) : formatSummary(*replayed));
    }
    return o.cancelled ? 130 : 0;
}

} // namespace bp::app
