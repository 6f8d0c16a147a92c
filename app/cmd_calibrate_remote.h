// batchpilot calibrate --target URL (docs/remote.md): a remote server's
// cost model, fitted from a bounded probe of it, stored keyed by target.
#pragma once

#include "app_options.h"
#include "command_args.h"

#include "engine/sim/calibration/remote_settings.h"

namespace bp::app {

// `args` are calibrate's, with --target given.
int runCalibrateRemote(const AppOptions &options, CommandArgs &args);

// --server-config FILE: the syntax export-config writes (vllm serve,
// text-generation-launcher, config.pbtxt, ...), or a BatchPilot config JSON.
Result<ServerSettings> settingsFromFile(const QString &path);

} // namespace bp::app
