#pragma once

#include "bench_util.h"

namespace bp::bench {

// `batchpilot-bench device-check`: the paged step's correctness on a device
// (engine/model/device_check.h), first thing in the GPU check.
int runDeviceCheckBench(const Args &args);
const StageOptions &deviceCheckStage();

} // namespace bp::bench
