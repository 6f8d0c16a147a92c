#include "cmd_calibrate.h"
#include "cli_text.h"

#include "cmd_calibrate_remote.h"
#include "server_config_file.h"

#include "command_args.h"
#include "commands.h"
#include "engine_host.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/sim/calibration/remote_server_model.h"
#include "engine/sim/tune/tune_pipeline.h"
#include "engine/store/trace_store.h"

#include <QFile>
#include <QTextStream>

#include <atomic>
#include <thread>

namespace bp::app {

namespace {

int fail(const QString &message, int code = 1)
{
    return failCommand(QStringLiteral("calibrate"), message, code);
}

QString percent(double rel)
{
    return QString::number(100 * rel, 'f', 1) + QLatin1Char('%');
}

void printCalibration(QTextStream &out, const Calibration &c)
{
    out << QStringLiteral("calibration %1: %2, from %3\n").arg(c.id).arg(q(c.describe()), q(c.source));
    const auto &k = c.cost.coef;
    out << QStringLiteral("  pass(b, L)  = %1 + %2*b + %3*b*L + %4*b*L^2  (us)\n")
               .arg(k[0] * 1e6, 0, 'g', 4)
               .arg(k[1] * 1e6, 0, 'g', 4)
               .arg(k[2] * 1e6, 0, 'g', 4)
               .arg(k[3] * 1e6, 0, 'g', 4);
    if (c.generative)
        out << QStringLiteral("  step(b, c)  = %1 + %2*b + %3*b*c  (us; one decode step at context c)\n")
                   .arg(k[4] * 1e6, 0, 'g', 4)
                   .arg(k[5] * 1e6, 0, 'g', 4)
                   .arg(k[6] * 1e6, 0, 'g', 4);
    if (c.generative && c.cost.hasIterationTerms())
        out << QStringLiteral(
                   "  iteration(n, T, A) = %1 + %2*n + %3*T + %4*A  (us; one step of policy continuous: n "
                   "sequences, T tokens fed, A = sum of tokens x context)\n")
                   .arg(k[7] * 1e6, 0, 'g', 4)
                   .arg(k[8] * 1e6, 0, 'g', 4)
                   .arg(k[9] * 1e6, 0, 'g', 4)
                   .arg(k[10] * 1e6, 0, 'g', 4);
    if (c.generative && c.cost.experts > 0) {
        out << QStringLiteral("  + %1*X  (us; X = active experts per MoE layer, %2 experts, top %3: "
                              "%2*(1-(1-%3/%2)^T) under uniform routing)\n")
                   .arg(k[13] * 1e6, 0, 'g', 4)
                   .arg(c.cost.experts)
                   .arg(c.cost.expertsPerToken);
        QStringList seen;
        for (const auto &a : c.cost.activeExperts)
            seen << QStringLiteral("T=%1: %2 (uniform %3)")
                        .arg(a.tokens)
                        .arg(a.measured, 0, 'f', 1)
                        .arg(a.expected, 0, 'f', 1);
        if (!seen.isEmpty())
            out << QStringLiteral("  active experts measured per step: %1\n")
                       .arg(seen.join(QStringLiteral(", ")));
    }
    out << QStringLiteral("  serving overhead per batch: %1 us\n").arg(c.cost.overheadS * 1e6, 0, 'f', 1);
    if (c.cost.stepOverheadS > 0)
        out << QStringLiteral("  serving overhead per continuous step: %1 us\n")
                   .arg(c.cost.stepOverheadS * 1e6, 0, 'f', 1);
    if (!c.cost.dispatchLateness.empty())
        out << QStringLiteral("  an idle engine's start of a batch (wake-up, hand-off, cold core): median %1 "
                              "us, p99 %2 us\n")
                   .arg(c.cost.latenessAt(0.5) * 1e6, 0, 'f', 1)
                   .arg(c.cost.latenessAt(0.99) * 1e6, 0, 'f', 1);
    if (!c.cost.concurrency.empty()) {
        QStringList k;
        for (std::size_t i = 0; i < c.cost.concurrency.size(); ++i)
            k << QStringLiteral("%1 at once x%2").arg(i + 2).arg(c.cost.concurrency[i], 0, 'f', 2);
        out << QStringLiteral("  contention between executors: %1\n").arg(k.join(", "));
    }
    out << QStringLiteral(
               "  fit error over %1 measurements: median %2, rms %3, worst %4; whole batches: median "
               "%5, worst %6\n")
               .arg(c.error.observations)
               .arg(percent(c.error.medianRel), percent(c.error.rmsRel), percent(c.error.maxRel),
                    percent(c.batchError.medianRel), percent(c.batchError.maxRel));
    if (c.measuredLength > 0)
        out << QStringLiteral("  measured lengths up to %1 tokens: a longer input's cost is extrapolated\n")
                   .arg(c.measuredLength);
    if (c.runSpread >= 0)
        out << QStringLiteral("  the same batch timed again: median spread %1 (max - min over median)\n")
                   .arg(percent(c.runSpread));
    if (c.iterationError.observations > 0)
        out << QStringLiteral("  generation steps (%1): median %2, worst %3\n")
                   .arg(c.iterationError.observations)
                   .arg(percent(c.iterationError.medianRel), percent(c.iterationError.maxRel));
}

int list(TraceStore &store, bool json)
{
    auto all = listCalibrations(store);
    if (!all)
        return fail(q(all.status().message()));
    QTextStream out(stdout);
    if (json) {
        nlohmann::json j = nlohmann::json::array();
        for (const Calibration &c : *all)
            j.push_back(toJson(c));
        out << q(j.dump(2)) << "\n";
        return 0;
    }
    out << QStringLiteral("%1  %2  %3  %4  %5  %6  %7\n")
               .arg("ID", -4)
               .arg("MODEL", -22)
               .arg("PRESET", -7) // a remote calibration: the server's kind
               .arg("DEVICE", -7)
               .arg("THREADS", -7)
               .arg("BATCH_ERR", -9)
               .arg("SOURCE");
    for (const Calibration &c : *all)
        out << QStringLiteral("%1  %2  %3  %4  %5  %6  %7\n")
                   .arg(c.id, -4)
                   .arg(q(c.model), -22)
                   .arg(c.remote ? q(c.remote->server) : q(c.preset), -7)
                   .arg(q(c.device), -7)
                   .arg(c.remote ? QStringLiteral("-") : QString::number(c.threads), -7)
                   .arg(percent(c.batchError.medianRel), -9)
                   .arg(c.remote ? QStringLiteral("%1 at %2").arg(q(c.source), q(c.remote->url))
                                 : q(c.source));
    return 0;
}

constexpr int kGoOn = -1;

// --export ID: on stdout, or --output FILE.
int exportOne(TraceStore &store, CommandArgs &args, double id, QTextStream &out, QTextStream &err)
{
    auto c = loadCalibration(store, std::int64_t(id));
    if (!c)
        return fail(q(c.status().message()));
    const QString text = q(toJson(*c).dump(2)) + "\n";
    const QString path = args.value("output");
    if (path.isEmpty()) {
        out << text;
        return 0;
    }
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(text.toUtf8()) < 0)
        return fail(QStringLiteral("cannot write '%1': %2").arg(path, f.errorString()));
    err << QStringLiteral("calibration %1 written to %2\n").arg(c->id).arg(path);
    return 0;
}

// --import FILE: stored under a new id.
int importOne(TraceStore &store, CommandArgs &args, QTextStream &out)
{
    auto c = loadCalibrationFile(args.value("import").toStdString());
    if (!c)
        return fail(q(c.status().message()));
    auto id = saveCalibration(store, *c);
    if (!id)
        return fail(q(id.status().message()));
    c->id = *id;
    out << QStringLiteral("imported as calibration %1: %2\n").arg(*id).arg(q(c->describe()));
    return 0;
}

// The profile grid measured on the loaded model (unless --no-profile).
int profile(CommandArgs &args, const std::shared_ptr<Backend> &backend, Calibration &key,
            std::vector<CostObservation> &observations, QStringList &sources, QTextStream &err)
{
    const bool quick = args.has("quick");
    const CalibrationGrid grid = quick ? CalibrationGrid::quick() : CalibrationGrid{};
    err << QStringLiteral("calibrate: profiling %1 (%2 grid)\n")
               .arg(q(key.describe()), quick ? "quick" : "full");
    err.flush();
    auto measured = measureProfile(backend, grid, key, [&](const CalibrationProgress &p) {
        err << QStringLiteral("  %1/%2  batch %3 x length %4%5: %6 ms\n")
                   .arg(p.done)
                   .arg(p.total)
                   .arg(p.batch, 3)
                   .arg(p.length, 4)
                   .arg(key.generative ? QStringLiteral(" x %1 new").arg(p.newTokens) : QString())
                   .arg(p.seconds * 1e3, 0, 'f', 2);
        err.flush();
    });
    if (!measured)
        return fail(q(measured.status().message()));
    observations = std::move(measured.value());
    sources << (quick ? QStringLiteral("profile (quick)") : QStringLiteral("profile"));
    return kGoOn;
}

// --session ID: its batch rows, and its serving overhead and lateness.
int addSession(TraceStore &store, std::int64_t id, Calibration &key,
               std::vector<CostObservation> &observations, QStringList &sources, QTextStream &err)
{
    auto s = store.session(id);
    if (!s)
        return fail(q(s.status().message()));
    if (s->model != key.model)
        err << QStringLiteral("warning: session %1 ran %2, not %3\n").arg(id).arg(q(s->model), q(key.model));
    auto rows = sessionObservations(store, id, key.generative);
    if (!rows)
        return fail(q(rows.status().message()));
    observations.insert(observations.end(), rows->batches.begin(), rows->batches.end());
    if (rows->overheadSamples > 0)
        key.cost.overheadS = rows->overheadS;
    if (rows->stepOverheadSamples > 0)
        key.cost.stepOverheadS = rows->stepOverheadS;
    if (!rows->lateness.empty())
        key.cost.dispatchLateness = sampleQuantiles(rows->lateness);
    sources << QStringLiteral("session %1 (%2 batches%3)")
                   .arg(id)
                   .arg(rows->batches.size())
                   .arg(rows->overlapped ? QStringLiteral(", %1 that overlapped another executor's left out")
                                               .arg(rows->overlapped)
                                         : QString());
    return kGoOn;
}

// Fit: the model's facts come from the model itself (loading is cheap; the
// grid is what takes time). Stored, then printed.
int fit(const AppOptions &options, CommandArgs &args, TraceStore &store, double session, QTextStream &out,
        QTextStream &err)
{
    auto backend = backendFor(options);
    if (!backend)
        return fail(q(backend.status().message()));
    const int threads =
        options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    Calibration key = Calibration::forModel((*backend)->info(), options.preset.toStdString(), threads);
    std::vector<CostObservation> observations;
    QStringList sources;
    if (!args.has("no-profile"))
        if (const int code = profile(args, *backend, key, observations, sources, err); code != kGoOn)
            return code;
    if (session > 0)
        if (const int code = addSession(store, std::int64_t(session), key, observations, sources, err);
            code != kGoOn)
            return code;
    key.source = sources.join(QStringLiteral(" + ")).toStdString();
    auto fitted = calibrate(key, observations);
    if (!fitted)
        return fail(q(fitted.status().message()));
    auto id = saveCalibration(store, *fitted);
    if (!id)
        return fail(q(id.status().message()));
    fitted->id = *id;
    if (const auto warning = interferenceWarning(*fitted))
        err << "warning: " << q(*warning) << "\n";
    if (args.has("json")) {
        out << q(toJson(*fitted).dump(2)) << "\n";
        return 0;
    }
    printCalibration(out, *fitted);
    out << QStringLiteral("simulate with it: batchpilot replay ID --simulate --calibration %1\n").arg(*id);
    return 0;
}

} // namespace

int runCalibrate(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("calibrate"));
    if (!args.error().isEmpty() || !args.positional().isEmpty())
        return fail(
            (args.error().isEmpty() ? QStringLiteral("unexpected argument") : args.error()) +
                "\nusage: batchpilot calibrate [--quick] [--session ID [--no-profile]] [--json] | --list | "
                "--export ID [-o FILE] | --import FILE\n"
                "       batchpilot calibrate --target URL --model NAME [--protocol openai|openai-chat|oip] "
                "[--server auto|vllm|tgi|sglang|triton|llamacpp|batchpilot] [--server-config FILE] [--quick] "
                "[--max-concurrency N] [--max-duration S] [--session ID | --refresh ID] [--json]",
            2);
    if (args.has("target") && !args.has("list"))
        return runCalibrateRemote(options, args);
    for (const char *flag : {"protocol", "server", "server-config", "max-concurrency", "max-duration",
                             "timeout", "metrics-url", "scrape-interval", "refresh"})
        if (args.has(flag))
            return fail(QStringLiteral("--%1 applies to a remote calibration (--target URL)").arg(flag), 2);
    const auto session = args.number("session", 0, 1, 9e18);
    const auto exportId = args.number("export", 0, 1, 9e18);
    if (!session || !exportId)
        return fail(args.error(), 2);
    if (args.has("no-profile") && *session == 0)
        return fail(QStringLiteral("--no-profile needs --session ID"), 2);

    auto store = TraceStore::open(options.db.toStdString());
    if (!store)
        return fail(q(store.status().message()));
    QTextStream out(stdout);
    QTextStream err(stderr);
    if (args.has("list"))
        return list(**store, args.has("json"));
    if (*exportId > 0)
        return exportOne(**store, args, *exportId, out, err);
    if (args.has("import"))
        return importOne(**store, args, out);
    return fit(options, args, **store, *session, out, err);
}

// --calibration ID|FILE, or the newest calibration of --model (and
// --preset, --device unless auto, --threads unless 0).
Result<CostNoise> costNoiseFor(const CommandArgs &args)
{
    const QString name = args.value("noise", QStringLiteral("drawn"));
    if (auto noise = parseCostNoise(name.toStdString()))
        return *noise;
    return Status(StatusCode::InvalidArgument,
                  QStringLiteral("--noise must be none, mean or drawn, not '%1'").arg(name).toStdString());
}

Result<std::optional<RemoteServerModel>> serverModelFor(const AppOptions &options,
                                                        const Calibration &calibration,
                                                        const std::optional<QString> &serverConfig)
{
    if (!calibration.remote || !simulatesServerModel(*calibration.remote) || !options.config.isEmpty())
        return std::optional<RemoteServerModel>();
    std::optional<ServerSettings> given;
    if (serverConfig) {
        auto file = settingsFromFile(*serverConfig);
        if (!file)
            return file.status();
        given = std::move(*file);
    }
    auto m = remoteServerModel(*calibration.remote, given ? &*given : nullptr);
    if (!m)
        return m.status();
    return std::optional<RemoteServerModel>(std::move(*m));
}

Result<BatchingConfig> simulatedReplicaConfig(const AppOptions &options, const Calibration &calibration,
                                              BatchingConfig config,
                                              const std::function<void(std::string)> &note)
{
    auto m = serverModelFor(options, calibration);
    if (!m)
        return m.status();
    if (*m) {
        config = (*m)->config;
        note("each replica runs " + (*m)->server + "'s scheduler; its settings: " + (*m)->describe());
    }
    if (config.policy == PolicyKind::Continuous && !calibration.generative)
        return Status(StatusCode::InvalidArgument,
                      "policy continuous needs a generative model's calibration");
    if (Status s = validate(config); !s)
        return s;
    return config;
}

Result<Calibration> calibrationFor(const TraceStore &store, const AppOptions &options,
                                   const CommandArgs &args)
{
    CalibrationChoice choice;
    choice.ref = args.value("calibration").toStdString();
    choice.model = options.model.toStdString();
    const bool builtin = choice.model.rfind("builtin:", 0) == 0 && choice.model != "builtin:echo";
    choice.preset = builtin ? options.preset.toStdString() : "";
    choice.device = options.device == QLatin1String("auto") ? "" : options.device.toStdString();
    if (options.threads > 0)
        choice.threads = options.threads;
    return chooseCalibration(store, choice);
}

} // namespace bp::app
