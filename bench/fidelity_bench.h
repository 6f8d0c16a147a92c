#pragma once

#include "bench_util.h"

namespace bp::bench {

// `batchpilot-bench fidelity`: replays two short traces for real and
// simulated (a calibration profiled first on the same model) under several
// configs and prints the simulator's error of throughput, p50 and p99 per
// config.
int runFidelityBench(const Args &args);
const StageOptions &fidelityStage();

} // namespace bp::bench
