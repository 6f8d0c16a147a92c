// Builds the engine the console and --headless serve: model, device,
// initial batching config. Errors are values with a message for the user.
#pragma once

#include "app_options.h"

#include "engine/engine.h"

#include <memory>

namespace bp::app {

struct EngineHostResult {
    std::unique_ptr<Engine> engine;
    QString error; // non-empty on failure
};

EngineHostResult createEngine(const AppOptions &options);

} // namespace bp::app
