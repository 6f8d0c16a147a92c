// batchpilot tune (--trace ID | --session ID) --slo SPEC --objective goodput|throughput:
// searches the batching knobs in simulation (engine/sim/tune/tuner.h) with a
// calibration's cost model, prints the Pareto front, the recommended config
// with its predicted figures and its capacity, then verifies the
// recommendation with a real-clock replay of the same arrivals and prints
// predicted vs measured. docs/tuning.md describes the workflow.
#pragma once

#include "app_options.h"

namespace bp::app {

int runTune(const AppOptions &options);

} // namespace bp::app
