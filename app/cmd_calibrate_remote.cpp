// batchpilot calibrate --target URL: a remote server calibrated from the
// outside (docs/remote.md "Calibrating a remote server"): its settings read
// where it publishes them (or --server-config FILE), the bounded probe plan
// printed and run (Ctrl+C keeps what was measured), the fit printed term by
// term with its error, and the calibration stored keyed by target.
// --session ID refines the newest calibration of that target with a
// recorded remote session's requests.
#include "cmd_calibrate_remote.h"
#include "cli_text.h"
#include "remote_fit_print.h"
#include "server_config_file.h"
#include "sigint_flag.h"

#include "remote/probe_runner.h"
#include "remote/settings_fetch.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/calibration/remote_calibrate.h"
#include "engine/sim/calibration/remote_server_model.h"
#include "engine/sim/calibration/unknown_server.h"
#include "engine/store/trace_store.h"
#include "engine/telemetry/target_metrics.h"

#include <QTextStream>

#include <atomic>
#include <cmath>
#include <cstdio>

namespace bp::app {

namespace {

int fail(const QString &message, int code = 1)
{
    return failCommand(QStringLiteral("calibrate"), message, code);
}

const QStringList kServers{"auto", "vllm", "tgi", "sglang", "triton", "llamacpp", "batchpilot"};

int store(TraceStore &db, Result<Calibration> fitted, bool json)
{
    if (!fitted)
        return fail(q(fitted.status().message()));
    auto id = saveCalibration(db, *fitted);
    if (!id)
        return fail(q(id.status().message()));
    fitted->id = *id;
    QTextStream out(stdout);
    if (json) {
        out << q(toJson(*fitted).dump(2)) << "\n";
        return 0;
    }
    printRemoteFit(out, *fitted);
    return 0;
}

// --session ID: the newest calibration of the target, refitted with the
// session's rows beside its own.
int refine(TraceStore &db, const remote::RemoteOptions &ro, const std::string &server, std::int64_t session,
           bool json)
{
    auto base = latestRemoteCalibration(db, ro.target.toString().toStdString(), ro.model.toStdString(),
                                        server == "auto" ? "" : server);
    if (!base)
        return fail(q(base.status().message()));
    auto s = db.session(session);
    if (!s)
        return fail(q(s.status().message()));
    if (s->kind != "remote")
        return fail(
            QStringLiteral("session %1 is not a remote session (kind %2)").arg(session).arg(q(s->kind)));
    auto requests = db.requests(session);
    if (!requests)
        return fail(q(requests.status().message()));
    RemoteCalibration r = *base->remote;
    int kvPad = 0;
    if (simulatesServerModel(r) && r.paddedKvView) // the probe's rows' way (chooseKvView)
        if (auto m = remoteServerModel(r, nullptr))
            kvPad = serverKvPad(m->config);
    const auto rows = sessionObservations(*requests, r.prefillChunk, kvPad);
    if (rows.empty())
        return fail(
            QStringLiteral("session %1 has no streamed request with two or more tokens to fit").arg(session));
    r.observations.insert(r.observations.end(), rows.begin(), rows.end());
    QTextStream(stderr) << QStringLiteral("calibrate: calibration %1 + %2 rows of session %3\n")
                               .arg(base->id)
                               .arg(rows.size())
                               .arg(session);
    return store(db,
                 remoteCalibration(base->model, base->vocabSize, base->positions, std::move(r),
                                   base->source + " + session " + std::to_string(session)),
                 json);
}

constexpr int kGoOn = -1;
// A pace move past this is warned of (the prediction's target is 15 %).
constexpr double kPaceWarning = 0.15;

// The flags of a remote calibration.
struct RemoteFlags {
    remote::RemoteOptions ro;
    QString protocol;
    std::string server; // --server: "auto" until detected
    double maxDuration = 600, scrape = 250, session = 0, refresh = 0;
};

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

// The model of a llama-server as its settings were read; nullopt for
// another kind, or settings not read.
std::optional<BatchingConfig> llamaCppModel(const std::string &server, const ServerSettings &settings)
{
    if (server != "llamacpp" || settings.empty())
        return std::nullopt;
    RemoteCalibration r;
    r.server = server;
    r.settings = settings;
    const auto m = remoteServerModel(r, nullptr);
    if (!m || m->config.server.kind != ServerKind::LlamaCpp)
        return std::nullopt;
    return m->config;
}

// A llama-server's slots as read (ProbeRunOptions::pinSlots); 0 for another
// kind, or settings not read.
int pinnedSlots(const std::string &server, const ServerSettings &settings)
{
    const auto c = llamaCppModel(server, settings);
    return c ? c->server.llamacpp.nParallel : 0;
}

// Whether a llama-server runs its slots' tokens in separate forward passes
// unless their slots are adjacent (a KV cache per slot: serverPrefillAlone).
bool splitsBySlot(const std::string &server, const ServerSettings &settings)
{
    const auto c = llamaCppModel(server, settings);
    return c && serverPrefillAlone(*c);
}

// The bounded probe `plan` of a server of kind `server` (its settings
// `settings`), said before it runs; Ctrl+C stops it and what was measured
// is fitted.
remote::ProbeRun runPlan(const RemoteFlags &f, const std::string &server, const ServerSettings &settings,
                         const ProbePlan &plan, QTextStream &err)
{
    const remote::RemoteOptions &ro = f.ro;
    const bool streaming = remote::isStreaming(ro.protocol);
    err << QStringLiteral(
               "calibrate: probing %1 (%2, %3): %4 requests, at most %5 s (Ctrl+C stops and fits what "
               "was measured)\n")
               .arg(ro.target.toString(), ro.model, f.protocol)
               .arg(plan.requests())
               .arg(std::chrono::duration_cast<std::chrono::seconds>(plan.bound()).count())
        << q(plan.describe());
    err.flush();
    remote::ProbeRunOptions po;
    po.remote = ro;
    po.plan = plan;
    po.dialect = remote::dialectFor(server);
    po.pinSlots = pinnedSlots(server, settings);
    if (const std::string d = remote::describe(po.dialect, ro.protocol); !d.empty())
        err << QStringLiteral("calibrate: requests to a %1 server: %2\n").arg(q(server), q(d));
    if (po.pinSlots > 0 && streaming)
        err << QStringLiteral("calibrate: a round's streams take slots 0, 1, ... of its %1 (id_slot): their "
                              "decodes share one forward pass a turn\n")
                   .arg(po.pinSlots);
    po.scrapeInterval = std::chrono::milliseconds(qint64(f.scrape));
    po.progress = [&err](const std::string &line) {
        err << "  " << q(line) << "\n";
        err.flush();
    };
    SigintFlag sigint;
    po.interrupt = sigint.flag();
    return remote::runProbe(po);
}

// `plan` within --timeout per request and --max-duration in all.
ProbePlan bounded(ProbePlan plan, const RemoteFlags &f)
{
    plan.timeout = f.ro.timeout;
    plan.maxDuration = std::chrono::seconds(qint64(f.maxDuration));
    return plan;
}

// The plan --quick or the full one picks, fitted to the model's length; a
// llama-server with a KV cache per slot gets the spread decode round too.
ProbePlan planFor(CommandArgs &args, const RemoteFlags &f, const ServerFacts &facts)
{
    const bool streaming = remote::isStreaming(f.ro.protocol);
    ProbePlan plan = (args.has("quick") ? ProbePlan::quick(f.ro.maxConcurrency, streaming)
                                        : ProbePlan::full(f.ro.maxConcurrency, streaming))
                         .fittedTo(facts.maxModelLen);
    if (streaming && splitsBySlot(f.server, facts.settings))
        plan = plan.withSpreadRound(pinnedSlots(f.server, facts.settings));
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

// Requests not sent, and the first that failed.
void reportShortfall(const remote::ProbeRun &run, QTextStream &err)
{
    if (!run.interrupted && run.requests.size() != run.planned)
        err << QStringLiteral("calibrate: %1 of the %2 planned requests were sent\n")
                   .arg(run.requests.size())
                   .arg(run.planned);
    for (const ProbeRequest &p : run.requests)
        if (!p.ok) {
            err << QStringLiteral("calibrate: %1 of %2 requests failed; the first: %3\n")
                       .arg(run.failed())
                       .arg(run.requests.size())
                       .arg(q(p.error));
            break;
        }
    err.flush();
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

// --refresh ID: the server's single-stream pace measured again (a few
// seconds) and calibration ID stored anew with every cost scaled to it,
// so that a prediction made now prices the server as it runs now.
int refresh(TraceStore &db, const RemoteFlags &f, std::int64_t id, bool json, QTextStream &err)
{
    auto base = loadCalibration(db, id);
    if (!base)
        return fail(q(base.status().message()));
    if (!base->remote)
        return fail(QStringLiteral("calibration %1 is of the embedded engine, not of a remote server: "
                                   "--refresh re-prices a calibrate --target")
                        .arg(id),
                    2);
    RemoteCalibration r = *base->remote;
    const QString target = f.ro.target.toString();
    if (q(r.url) != target || q(base->model) != f.ro.model)
        return fail(QStringLiteral("calibration %1 is of %2 at %3, not of %4 at %5")
                        .arg(id)
                        .arg(q(base->model), q(r.url), f.ro.model, target),
                    2);
    if (r.protocol != f.protocol.toStdString())
        err << QStringLiteral("calibrate: calibration %1 probed with %2; the refresh with %3\n")
                   .arg(id)
                   .arg(q(r.protocol), f.protocol);
    if (!r.pace || !remote::isStreaming(f.ro.protocol))
        return fail(QStringLiteral("calibration %1 holds no single-stream pace to compare with (probed "
                                   "without token events, or before calibrations kept one), or --protocol "
                                   "%2 streams no tokens: calibrate it again")
                        .arg(id)
                        .arg(f.protocol),
                    2);
    const remote::ProbeRun run =
        runPlan(f, r.server, r.settings, bounded(ProbePlan::refresh(*r.pace), f), err);
    reportShortfall(run, err);
    const auto pace = paceAgainst(r, run.requests);
    if (!pace)
        return fail(QStringLiteral("the refresh measured no single-stream decode (%1 of %2 requests "
                                   "answered): calibration %3 is unchanged")
                        .arg(run.requests.size() - run.failed())
                        .arg(run.requests.size())
                        .arg(id));
    const std::string line = describe(*pace, id);
    err << "calibrate: " << q(line) << "\n";
    if (std::abs(pace->ratio - 1) > kPaceWarning)
        err << QStringLiteral("calibrate: the server runs %1 % %2 than when calibration %3 was measured; the "
                              "new calibration prices it as it runs now\n")
                   .arg(std::abs(100 * (pace->ratio - 1)), 0, 'f', 0)
                   .arg(pace->ratio > 1 ? "slower" : "faster")
                   .arg(id);
    err.flush();
    scalePace(r, pace->ratio);
    r.probe.plan += line + "\n";
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "x%.3f", pace->ratio);
    return store(db,
                 remoteCalibration(base->model, base->vocabSize, base->positions, std::move(r),
                                   base->source + ", refreshed (pace " + ratio + ", " +
                                       std::to_string(run.requests.size()) + " requests)"),
                 json);
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
