// The trace-store subcommands of `batchpilot` (no window needed):
//   import-trace FILE|--sample [--format F] [--skip-failed] [--reject-bad-rows] [--name NAME] [--json]
//                (--sample: the bundled Azure trace, app/data_paths.h)
//   traces [--json]
//   sessions [--json]
//   replay ID [--trace] [--speed X] [--length-scale S] [--limit N]
//          [--config FILE] [--virtual] [--no-clamp] [--compare SESSION]
//          [--notes TEXT] [--json]
// All honour --db PATH. Exit codes: 0 done, 1 failed (missing file, unknown
// id, a database that is not ours, ...), 2 bad usage, 130 replay cancelled
// by Ctrl-C. docs/replay.md describes them.
#pragma once

#include "app_options.h"

namespace bp::app {

int runImportTrace(const AppOptions &options);
int runTraces(const AppOptions &options);
int runSessions(const AppOptions &options);
int runReplay(const AppOptions &options);

} // namespace bp::app
