// --server-config FILE: a server's settings from a file (docs/remote.md).
#pragma once

#include "engine/sim/calibration/remote_settings.h"

#include <QString>

namespace bp::app {

// The syntax export-config writes (vllm serve, text-generation-launcher,
// llama-server, an Ollama environment, config.pbtxt, ...), or a BatchPilot
// config JSON.
Result<ServerSettings> settingsFromFile(const QString &path);

} // namespace bp::app
