// batchpilot tune --target URL (cmd_tune_remote.h).
#include "cmd_tune_remote.h"
#include "cli_text.h"

#include "cmd_tune_text.h"

#include "remote/http_remote_target.h"
#include "remote/settings_fetch.h"

#include "server_config_file.h"

#include "engine/config/config_json.h"
#include "engine/config/server_command.h"
#include "engine/sim/calibration/calibration_store.h"

namespace bp::app {

namespace {

// The keys of `after` whose values differ from `before`, nested as the
// config's JSON is: the body of PUT /v1/config that changes exactly those.
nlohmann::json changedKeys(const nlohmann::json &before, const nlohmann::json &after)
{
    nlohmann::json out = nlohmann::json::object();
    for (const auto &[key, value] : after.items()) {
        const auto it = before.find(key);
        if (it != before.end() && it->is_object() && value.is_object()) {
            nlohmann::json inner = changedKeys(*it, value);
            if (!inner.empty())
                out[key] = std::move(inner);
        } else if (it == before.end() || *it != value) {
            out[key] = value;
        }
    }
    return out;
}

nlohmann::json configPatchJson(const BatchingConfig &before, const BatchingConfig &after)
{
    return changedKeys(toJson(before), toJson(after));
}

} // namespace

std::string launchText(const BatchingConfig &config, const std::string &model)
{
    return serverLaunchText(config, model);
}

Result<RemoteTune> remoteTune(const TraceStore &store, const AppOptions &options, const CommandArgs &args)
{
    RemoteTune t;
    t.options.target = QUrl(args.value("target"));
    if (!options.modelGiven)
        return Status(StatusCode::InvalidArgument,
                      "tune --target needs --model NAME: the model's name on the server");
    t.options.model = options.model;
    t.options.token = options.token;
    const std::string url = t.options.target.toString().toStdString();
    auto c = args.has("calibration") ? resolveCalibration(store, args.value("calibration").toStdString())
                                     : latestRemoteCalibration(store, url, options.model.toStdString(), "");
    if (!c)
        return c.status();
    if (!c->remote)
        return Status(
            StatusCode::InvalidArgument,
            "calibration " + std::to_string(c->id) +
                " is of the embedded engine, not of a remote server: batchpilot calibrate --target " + url);
    t.calibration = std::move(*c);
    const std::string &server = t.calibration.remote->server;
    t.options.server = server; // the verifying replay's bodies: the probe's dialect
    const std::optional<ServerKind> kind = parseServerKind(server);
    if (!kind)
        return Status(StatusCode::InvalidArgument,
                      "calibration " + std::to_string(t.calibration.id) + ": " +
                          *unknownKindMessage(*t.calibration.remote, "tune --target"));
    if (args.has("apply") && *kind != ServerKind::BatchPilot)
        return Status(StatusCode::InvalidArgument,
                      "--apply sends the pick with PUT /v1/config, which only a BatchPilot server has; " +
                          server +
                          " takes its batching settings at launch: drop --apply, restart the server with the "
                          "printed command, then check it with replay --target");
    if (const auto p = remote::parseProtocol(q(t.calibration.remote->protocol)))
        t.options.protocol = *p;
    if (options.vocabSize > 0)
        t.options.vocabSize = options.vocabSize;
    else
        t.options.vocabSize = t.calibration.vocabSize;
    t.options.maxInputTokens = options.maxLength > 0 ? options.maxLength : t.calibration.maxSequenceLength;
    if (Status st = remote::validate(t.options); !st)
        return st;
    // The server's settings now, not as they were at calibration time (or
    // the operator's file).
    auto settings = args.has("server-config") ? settingsFromFile(args.value("server-config"))
                                              : remote::fetchServerSettings(t.options, server, nullptr);
    if (!settings)
        return Status(settings.status().code(),
                      "the server's current settings: " + settings.status().message() +
                          (args.has("server-config") ? "" : " (or give them: --server-config FILE)"));
    auto current = remoteServerModel(*t.calibration.remote, &*settings);
    if (!current)
        return current.status();
    t.current = current->config;
    t.model = *current;
    t.settingsSource = settings->source;
    return t;
}

void printRemotePick(QTextStream &out, const RemoteTune &t, const BatchingConfig &pick,
                     const TuneFigures &pickFigures, const TuneFigures &currentFigures, bool tokenLevel)
{
    out << QStringLiteral("\nOn %1 (%2), predicted side by side on the same arrivals:\n")
               .arg(t.options.target.toString(), q(t.calibration.remote->server));
    out << header(tokenLevel, 17);
    out << row(QStringLiteral("server's current"), currentFigures, tokenLevel, 17);
    out << row(QStringLiteral("recommended"), pickFigures, tokenLevel, 17);
    if (pick.server.kind != ServerKind::BatchPilot) {
        out << QStringLiteral("  server's current: %1\n  recommended: %2\n")
                   .arg(q(t.model.describe()), q(describeConfig(pick)));
        const bool triton = pick.server.kind == ServerKind::Triton;
        out << (triton ? QStringLiteral("  to apply, set in the model's config.pbtxt and reload it:\n")
                       : QStringLiteral("  to apply, restart the server with:\n"));
        out << q(launchText(pick, t.options.model.toStdString()));
        out << QStringLiteral("  then check it: batchpilot replay --target %1 --model %2 (the same trace)\n")
                   .arg(t.options.target.toString(), t.options.model);
        return;
    }
    const std::string change = describeChange(t.current, pick);
    out << QStringLiteral("  changes from the server's current settings: %1\n")
               .arg(change.empty() ? QStringLiteral("none") : q(change));
    const nlohmann::json patch = configPatchJson(t.current, pick);
    out << QStringLiteral("  in the server's syntax (PUT /v1/config):\n    %1\n").arg(q(patch.dump()));
    out << QStringLiteral("  to apply: curl -X PUT %1 -H 'Content-Type: application/json'%2 -d '%3'\n"
                          "  (or: batchpilot tune ... --target %4 --apply)\n")
               .arg(remote::routeUrl(t.options.target, QStringLiteral("/v1/config")).toString(),
                    t.options.token.isEmpty() ? QString()
                                              : QStringLiteral(" -H 'Authorization: Bearer $TOKEN'"),
                    q(patch.dump()), t.options.target.toString());
}

Status applyPick(const RemoteTune &t, const BatchingConfig &pick)
{
    const QUrl url = remote::routeUrl(t.options.target, QStringLiteral("/v1/config"));
    const nlohmann::json patch = configPatchJson(t.current, pick);
    const remote::HttpGet r =
        remote::httpSend(url, "PUT", QByteArray::fromStdString(patch.dump()), t.options.token);
    if (!r.error.isEmpty())
        return Status(StatusCode::Unavailable,
                      "PUT " + url.toString().toStdString() + ": " + r.error.toStdString());
    if (r.status != 200)
        return Status(StatusCode::InvalidArgument, "PUT " + url.toString().toStdString() + ": HTTP " +
                                                       std::to_string(r.status) + " " +
                                                       remote::errorText(r.body).toStdString());
    return Status::ok();
}

Result<ReplayOutcome> replayOnTarget(std::shared_ptr<TraceStore> store, const RemoteTune &t,
                                     ReplayOptions options,
                                     const std::function<void(const ReplayProgress &)> &progress,
                                     const std::atomic<bool> *cancel)
{
    auto target = remote::HttpRemoteTarget::create(t.options);
    if (!target)
        return target.status();
    options.clock = ReplayClock::Real;
    Replayer replayer(std::move(store));
    return replayer.runRemote(options, **target, progress, cancel);
}

} // namespace bp::app
