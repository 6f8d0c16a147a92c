#pragma once

#include "bench_util.h"

namespace bp::bench {

// `batchpilot-bench load`: open-loop arrivals (Poisson, Gamma, a trace)
// against a fresh engine per policy (and per rate with --rates), latency
// from each request's scheduled arrival, warm-up excluded; per policy the
// throughput, p50/p90/p99, padding efficiency, mean batch size and the
// fraction of the profile ceiling reached. See load_run.h for the timeline.
int runLoadBench(const Args &args);
const StageOptions &loadStage();

} // namespace bp::bench
