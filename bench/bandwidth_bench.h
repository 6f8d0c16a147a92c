#pragma once

#include "bench_util.h"

namespace bp::bench {

// `batchpilot-bench bandwidth`: the device's copy bandwidth
// (engine/model/memory_bandwidth.h), the yardstick of a memory-bound step.
int runBandwidthBench(const Args &args);
const StageOptions &bandwidthStage();

} // namespace bp::bench
