// Subcommands that speak other tools' formats (no window needed):
//   export-config --format triton|vllm|tgi|torchserve|ray-serve (--session ID | --config FILE) [-o FILE]
//       a session's last config, or a config file, in that server's syntax
//       (engine/config/config_export.h; docs/export.md)
//   import-config FILE [--format F] [-o FILE] [--json]
//       the inverse: a server's settings in its syntax, as a BatchPilot config
//       (engine/config/config_import.h)
//   export-trace ID [--trace] [--format mooncake] [-o FILE]
//       a session's arrivals (or an imported trace's rows) as Mooncake JSON Lines
// The exports honour --db PATH. Output goes to stdout without -o. Exit codes: 0 done,
// 1 failed (unknown id, unreadable config, unwritable file), 2 bad usage.
#pragma once

#include "app_options.h"

namespace bp::app {

int runExportConfig(const AppOptions &options);
int runExportTrace(const AppOptions &options);
int runImportConfig(const AppOptions &options);

} // namespace bp::app
