// The flags `tune` and `plan` read alike: a source (--trace ID or --session
// ID), an SLO, --jobs and --config. Each command keeps its own option table
// (commands.cpp) and reads its own flags after these.
#pragma once

#include "app_options.h"
#include "command_args.h"

#include "engine/core/batching_config.h"
#include "engine/replay/replayer.h"
#include "engine/sim/tune/tuner.h"

#include <optional>

namespace bp::app {

// The checks both commands run first, in this order: the parser's error, a
// positional argument, not exactly one of --trace/--session, no --slo
// (`sloRequired` says so), then the SLO as read. Each message but the
// SLO's own ends with "\n" + `usage`; all are InvalidArgument.
Result<TuneSlo> parseSourceAndSlo(CommandArgs &args, const char *usage, const QString &sloRequired);
// --trace ID or --session ID as a replay source; nullopt, with args.error()
// set, when the ID is not a number in [1, 9e18].
std::optional<ReplaySource> replaySourceFor(CommandArgs &args);
// --jobs N in [1, 16], by default the cores (at most 16); nullopt, with
// args.error() set, when out of range.
std::optional<int> jobsFor(CommandArgs &args);
// --config FILE read (the common option); nullopt when none was given.
Result<std::optional<BatchingConfig>> givenConfig(const AppOptions &options);

} // namespace bp::app
