#pragma once

#include "bench_util.h"

namespace bp::bench {

// `batchpilot-bench steps`: decode steps of a model on the paged step at
// each batch size, and for a mixture-of-experts model the experts each step
// touches (measured, and what uniform routing expects) with the cost
// model's active-experts term fitted to them (docs/simulation.md).
int runStepsBench(const Args &args);
const StageOptions &stepsStage();

} // namespace bp::bench
