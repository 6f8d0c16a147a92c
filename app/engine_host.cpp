#include "engine_host.h"
#include "cli_text.h"

#include "engine/config/config_json.h"
#include "engine/model/model_registry.h"
#include "engine/telemetry/host_facts.h"

#include <QDir>
#include <QFileInfo>
#include <QObject>
#include <QTextStream>

namespace bp::app {

namespace {

// Opens the store and starts recording `engine`; returns the warning when
// recording is not possible.
QString startRecording(const AppOptions &o, Engine &engine, EngineHostResult &out)
{
    if (o.db.isEmpty())
        return {};
    const QString dir = QFileInfo(o.db).absolutePath();
    if (!QDir().mkpath(dir))
        return QStringLiteral("cannot create the directory '%1' for the trace database").arg(dir);
    auto store = TraceStore::open(o.db.toStdString());
    if (!store)
        return q(store.status().message());
    SessionStart info;
    info.kind = "live";
    info.host = hostFacts();
    // The model's facts the session row has no column for, for its report
    // (app/report: the session's model rows).
    const ModelInfo &model = engine.model();
    info.host["model"] = {{"architecture", model.architecture},
                          {"dtype", model.dtype},
                          {"kv_bytes_per_token", model.kvBytesPerToken},
                          {"parameters", model.parameters}};
    info.notes = o.headless ? "headless" : "console";
    auto recorder = SessionRecorder::start(*store, engine, info);
    if (!recorder)
        return q(recorder.status().message());
    out.store = std::move(store.value());
    out.recorder = std::move(recorder.value());
    return {};
}

} // namespace

EngineHostResult::~EngineHostResult()
{
    shutdown();
}

void EngineHostResult::shutdown()
{
    if (engine)
        engine->shutdown(ShutdownMode::Drain);
    if (recorder) {
        if (Status s = recorder->finish(); !s)
            QTextStream(stderr) << "batchpilot: could not end the recorded session: " << q(s.message())
                                << "\n";
    }
}

Result<std::shared_ptr<Backend>> backendFor(const AppOptions &o)
{
    ModelSpec spec;
    spec.name = o.model.toStdString();
    spec.device = o.device.toStdString();
    spec.preset = o.preset.toStdString();
    spec.dtype = o.dtype.toStdString();
    spec.cudaGraphs = o.cudaGraphs;
    spec.threads = o.threads;
    spec.vocabSize = o.vocabSize;
    spec.maxSequenceLength = o.maxLength;
    return createBackend(spec);
}

PolicyKind defaultPolicyFor(const ModelInfo &model, bool hasSteps)
{
    return model.generative && hasSteps && model.name != "builtin:echo" ? PolicyKind::Continuous
                                                                        : PolicyKind::Dynamic;
}

QString defaultPolicyNote(const ModelInfo &model)
{
    const QString policy = q(std::string(policyName(defaultPolicyFor(model, true))));
    if (model.name == "builtin:echo")
        return QObject::tr("Default for builtin:echo (no compute): %1.").arg(policy);
    return model.generative ? QObject::tr("Default for a generative model: %1.").arg(policy)
                            : QObject::tr("Default for an encoder: %1.").arg(policy);
}

Result<BatchingConfig> batchingConfigFor(const AppOptions &o, Backend *backend)
{
    if (!o.config.isEmpty())
        return loadConfigFile(o.config.toStdString()); // an explicit config wins, policy included
    BatchingConfig c;
    if (backend)
        c.policy = defaultPolicyFor(backend->info(), backend->steps() != nullptr);
    return c;
}

EngineHostResult createEngine(const AppOptions &o)
{
    EngineHostResult out;
    auto backend = backendFor(o);
    if (!backend) {
        out.error = q(backend.status().message());
        return out;
    }
    auto config = batchingConfigFor(o, backend->get());
    if (!config) {
        out.error = q(config.status().message());
        return out;
    }
    EngineOptions options;
    options.backend = std::move(backend.value());
    options.batching = *config;
    if (o.spinUs >= 0)
        options.spin = std::chrono::microseconds(o.spinUs);
    auto engine = Engine::create(std::move(options));
    if (!engine) {
        out.error = q(engine.status().message());
        return out;
    }
    out.engine = std::move(engine.value());
    const QString why = startRecording(o, *out.engine, out);
    if (!why.isEmpty()) {
        out.loggingWarning =
            QStringLiteral("trace logging is off: %1. Serving continues without recording.").arg(why);
        QTextStream(stderr) << "batchpilot: " << out.loggingWarning << "\n";
    }
    return out;
}

} // namespace bp::app
