// batchpilot calibrate --target URL: a remote server calibrated from the
// outside (docs/remote.md "Calibrating a remote server"): its settings read
// where it publishes them (or --server-config FILE), the bounded probe plan
// printed and run (Ctrl+C keeps what was measured), the fit printed term by
// term with its error, and the calibration stored keyed by target.
// --session ID and --refresh ID re-price a stored one
// (cmd_calibrate_refit.cpp).
#include "cmd_calibrate_remote.h"
#include "calibrate_remote_common.h"
#include "cli_text.h"
#include "server_config_file.h"

#include "remote/probe_runner.h"
#include "remote/settings_fetch.h"

#include "engine/sim/calibration/remote_calibrate.h"
#include "engine/sim/calibration/remote_server_model.h"
#include "engine/sim/calibration/unknown_server.h"
#include "engine/store/trace_store.h"
#include "engine/telemetry/target_metrics.h"

#include <QTextStream>

#include <cmath>

namespace bp::app {

namespace {

using namespace calibrate_target;

const QStringList kServers{"auto", "vllm", "tgi", "sglang", "triton", "llamacpp", "batchpilot"};

constexpr int kGoOn = -1;

int parseRemote(const AppOptions &options, CommandArgs &args, RemoteFlags &f)
{
    remote::RemoteOptions &ro = f.ro;
    ro.target = QUrl(args.value("target"));
    f.protocol = args.value("protocol", QStringLiteral("openai"));
    const auto parsed = remote::parseProtocol(f.protocol);
    if (!parsed)
        return fail(
            QStringLiteral("--protocol must be one of %1, not '%2'").arg(remote::protocolNames(), f.protocol),
            2);
    ro.protocol = *parsed;
    if (!options.modelGiven)
        return fail(QStringLiteral("calibrate --target needs --model NAME: the model's name on the server"),
                    2);
    ro.model = options.model;
    ro.token = options.token;
    const QString serverFlag = args.value("server", QStringLiteral("auto"));
    if (!kServers.contains(serverFlag))
        return fail(
            QStringLiteral("--server must be one of %1, not '%2'").arg(kServers.join('|'), serverFlag), 2);
    const auto concurrency = args.number("max-concurrency", 32, 1, 4096);
    const auto timeout = args.number("timeout", 60000, 1, 86400000);
    const auto maxDuration = args.number("max-duration", 600, 1, 86400);
    const auto scrape = args.number("scrape-interval", 250, 0, 86400000);
    const auto session = args.number("session", 0, 1, 9e18);
    const auto refresh = args.number("refresh", 0, 1, 9e18);
    if (!concurrency || !timeout || !maxDuration || !scrape || !session || !refresh)
        return fail(args.error(), 2);
    if (*refresh > 0)
        for (const char *flag : {"session", "quick", "server", "server-config"})
            if (args.has(flag))
                return fail(QStringLiteral("--refresh keeps the calibration's server, settings and rows; "
                                           "--%1 does not go with it")
                                .arg(flag),
                            2);
    ro.maxConcurrency = int(*concurrency);
    ro.timeout = std::chrono::milliseconds(qint64(*timeout));
    if (args.has("metrics-url"))
        ro.metricsUrl = QUrl(args.value("metrics-url"));
    if (options.vocabSize > 0)
        ro.vocabSize = options.vocabSize;
    if (Status st = remote::validate(ro); !st)
        return fail(q(st.message()), 2);
    f.server = serverFlag.toStdString();
    f.maxDuration = *maxDuration;
    f.scrape = *scrape;
    f.session = *session;
    f.refresh = *refresh;
    return kGoOn;
}

// What the server says of itself before the probe: its kind, its settings
// (or --server-config's) and its model length, which the plan fits.
struct ServerFacts {
    std::optional<prom::Exposition> metrics;
    ServerSettings settings;
    std::int64_t maxModelLen = 0;
};

int readServer(const AppOptions &options, CommandArgs &args, RemoteFlags &f, ServerFacts &facts,
               QTextStream &err)
{
    auto metrics = remote::scrapeOnce(f.ro);
    if (!metrics)
        err << QStringLiteral("calibrate: no /metrics (%1): the probe runs without the server's limits\n")
                   .arg(q(metrics.status().message()));
    else
        facts.metrics = *metrics;
    if (f.server == "auto") {
        f.server = metrics ? detectServer(*metrics) : std::string();
        QString from = QStringLiteral("from /metrics");
        if (f.server.empty()) {
            f.server = remote::detectFromRoutes(f.ro);
            from = QStringLiteral("from GET /props");
        }
        err << QStringLiteral("calibrate: server %1\n")
                   .arg(f.server.empty()
                            ? QStringLiteral("not recognised from /metrics or its routes (give --server)")
                            : q(f.server) + " (" + from + ")");
    }
    if (args.has("server-config")) {
        auto s = settingsFromFile(args.value("server-config"));
        if (!s)
            return fail(q(s.status().message()));
        facts.settings = std::move(*s);
    } else if (auto s = remote::fetchServerSettings(f.ro, f.server, metrics ? &*metrics : nullptr)) {
        facts.settings = std::move(*s);
    } else {
        err << QStringLiteral("calibrate: the server's settings are not known: %1\n")
                   .arg(q(s.status().message()));
    }
    for (const std::string &note : facts.settings.notes)
        err << QStringLiteral("  note: %1\n").arg(q(note));
    facts.maxModelLen = facts.settings.maxModelLen.value_or(
        options.maxLength > 0 ? options.maxLength : remote::RemoteOptions{}.maxInputTokens);
    return kGoOn;
}

// The plan --quick or the full one picks, fitted to the model's length; a
// llama-server with a KV cache per slot (serverPrefillAlone: adjacent slots
// only share a forward pass) gets the spread decode round too.
ProbePlan planFor(CommandArgs &args, const RemoteFlags &f, const ServerFacts &facts)
{
    const bool streaming = remote::isStreaming(f.ro.protocol);
    ProbePlan plan = (args.has("quick") ? ProbePlan::quick(f.ro.maxConcurrency, streaming)
                                        : ProbePlan::full(f.ro.maxConcurrency, streaming))
                         .fittedTo(facts.maxModelLen);
    if (const auto c = llamaCppModel(f.server, facts.settings); streaming && c && serverPrefillAlone(*c))
        plan = plan.withSpreadRound(c->server.llamacpp.nParallel);
    return bounded(plan, f);
}

// A server of unknown kind: what the probe's rounds show of its scheduler.
void inferUnknownServer(const remote::ProbeRun &run, ServerSettings &settings, QTextStream &err)
{
    settings = inferredSettings(inferScheduler(run.requests));
    err << QStringLiteral("calibrate: the server's kind is not known; inferred from the probe's rounds%1:\n")
               .arg(hasInferredScheduler(settings)
                        ? QString()
                        : QStringLiteral(" (not enough to simulate it: give --server KIND)"));
    for (const std::string &line : settings.notes)
        err << "  " << q(line) << "\n";
}

RemoteCalibration calibrationOf(const RemoteFlags &f, const ServerSettings &settings, const ProbePlan &plan,
                                const remote::ProbeRun &run, const std::optional<PaceChange> &pace,
                                QTextStream &err)
{
    RemoteCalibration r;
    r.url = f.ro.target.toString().toStdString();
    r.server = f.server;
    r.protocol = f.protocol.toStdString();
    r.settings = settings;
    r.prefillChunk = prefillChunkOf(settings);
    r.limits =
        observedLimits(run.scrapes, run.first ? &*run.first : nullptr, run.last ? &*run.last : nullptr);
    for (const ProbeRequest &p : run.requests)
        if (p.ok)
            r.limits.longestPrompt = std::max(r.limits.longestPrompt.value_or(0), double(p.promptTokens));
    r.probe.requests = run.requests.size();
    r.probe.failed = run.failed();
    r.probe.seconds = run.seconds;
    r.probe.interrupted = run.interrupted;
    r.probe.plan = plan.describe();
    r.probe.plan += "prompt tokens drawn at random, seed " + std::to_string(run.seed) +
                    " (a new seed per run: no prompt of an earlier probe is in the server's cache)\n";
    for (const std::string &change : run.changes)
        r.probe.plan += "changed while it ran: " + change + "\n";
    if (pace)
        r.probe.plan += describe(*pace) + "\n";
    bool alone = prefillAlone(r.server), saves = false;
    int kvPad = 0;
    if (simulatesServerModel(r))
        // The server model's chunk, its settings as read or the probe's cap
        // (a step bound below the longest prompt): the rows then count a
        // long prompt's steps as the server ran them; and whether a prompt
        // beside decodes runs passes of its own.
        if (auto m = remoteServerModel(r, nullptr)) {
            if (r.prefillChunk == 0)
                r.prefillChunk = serverPrefillChunk(m->config);
            alone = alone || serverPrefillAlone(m->config);
            kvPad = serverKvPad(m->config);
            saves = serverSavesIdleSlots(m->config);
        }
    const bool streaming = remote::isStreaming(f.ro.protocol);
    KvViewChoice view = chooseKvView(run.requests, r.prefillChunk, streaming, alone, kvPad, saves);
    if (const std::string line = describe(view, kvPad); !line.empty())
        err << "calibrate: " << q(line) << "\n";
    r.observations = std::move(view.rows);
    r.paddedKvView = view.padded;
    if (streaming)
        r.pace = paceReference(run.requests);
    return r;
}

// The server's pace at the probe's start and end: a move the size of the
// prediction's target is said, since the fit prices one pace for both.
void reportPace(const std::optional<PaceChange> &pace, QTextStream &err)
{
    if (!pace)
        return;
    err << "calibrate: " << q(describe(*pace)) << "\n";
    if (std::abs(pace->change()) > kPaceWarning)
        err << QStringLiteral("calibrate: warning: the server's pace moved %1 % while the probe ran: the fit "
                              "prices one pace, and a prediction from it carries the move (is something else "
                              "running on the server's machine? calibrate again when it is quiet)\n")
                   .arg(std::abs(100 * pace->change()), 0, 'f', 0);
    err.flush();
}

} // namespace

int runCalibrateRemote(const AppOptions &options, CommandArgs &args)
{
    RemoteFlags f;
    if (const int code = parseRemote(options, args, f); code != kGoOn)
        return code;
    const bool json = args.has("json");
    auto db = TraceStore::open(options.db.toStdString());
    if (!db)
        return fail(q(db.status().message()));
    if (f.session > 0)
        return refine(**db, f.ro, f.server, std::int64_t(f.session), json);
    QTextStream err(stderr);
    if (f.refresh > 0)
        return refresh(**db, f, std::int64_t(f.refresh), json, err);

    // The server's kind and settings first: the plan fits its model length.
    ServerFacts facts;
    if (const int code = readServer(options, args, f, facts, err); code != kGoOn)
        return code;
    const ProbePlan plan = planFor(args, f, facts);
    const remote::ProbeRun run = runPlan(f, f.server, facts.settings, plan, err);
    if (f.server.empty() || f.server == "auto")
        f.server = run.server;
    if (f.server.empty() && !args.has("server-config"))
        inferUnknownServer(run, facts.settings, err);
    const auto pace = paceChange(run.requests);
    RemoteCalibration r = calibrationOf(f, facts.settings, plan, run, pace, err);
    reportShortfall(run, err);
    reportPace(pace, err);
    const std::string source = "probe (" + std::to_string(run.requests.size()) + " requests, " +
                               QString::number(run.seconds, 'f', 1).toStdString() + " s" +
                               (run.interrupted ? ", stopped early" : "") + ")";
    return store(
        **db,
        remoteCalibration(f.ro.model.toStdString(), f.ro.vocabSize, facts.maxModelLen, std::move(r), source),
        json);
}

} // namespace bp::app
