#pragma once

#include "bench_util.h"

namespace bp::bench {

// `batchpilot-bench profile`: the model's latency over batch size × padded
// length, warm-up excluded; prints the table and the ceiling per length,
// --json FILE saves it (the format `load --ceiling` reads).
int runProfileBench(const Args &args);
const StageOptions &profileStage();

} // namespace bp::bench
