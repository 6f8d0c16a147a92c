// batchpilot calibrate --target URL (docs/remote.md): a remote server's
// cost model, fitted from a bounded probe of it, stored keyed by target.
#pragma once

#include "app_options.h"
#include "command_args.h"

namespace bp::app {

// `args` are calibrate's, with --target given.
int runCalibrateRemote(const AppOptions &options, CommandArgs &args);

} // namespace bp::app
