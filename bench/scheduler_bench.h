#pragma once

#include "bench_util.h"

namespace bp::bench {

// `batchpilot-bench scheduler`: the engine's own overhead with builtin:echo.
int runSchedulerBench(const Args &args);
const StageOptions &schedulerStage();

} // namespace bp::bench
