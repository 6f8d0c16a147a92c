#include "engine_host.h"

#include "engine/config_json.h"
#include "engine/model_registry.h"

namespace bp::app {

EngineHostResult createEngine(const AppOptions &o)
{
    EngineHostResult out;
    ModelSpec spec;
    spec.name = o.model.toStdString();
    spec.device = o.device.toStdString();
    spec.preset = o.preset.toStdString();
    spec.threads = o.threads;
    auto backend = createBackend(spec);
    if (!backend) {
        out.error = QString::fromStdString(backend.status().message());
        return out;
    }
    EngineOptions options;
    options.backend = std::move(backend.value());
    if (!o.config.isEmpty()) {
        auto config = loadConfigFile(o.config.toStdString());
        if (!config) {
            out.error = QString::fromStdString(config.status().message());
            return out;
        }
        options.batching = *config;
    }
    auto engine = Engine::create(std::move(options));
    if (!engine) {
        out.error = QString::fromStdString(engine.status().message());
        return out;
    }
    out.engine = std::move(engine.value());
    return out;
}

} // namespace bp::app
