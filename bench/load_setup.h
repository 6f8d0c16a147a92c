// The inputs of `batchpilot-bench load` (load_bench.h): the workload and
// the base config its flags describe, and its option table.
#pragma once

#include "bench_util.h"

#include "engine/core/batching_config.h"
#include "engine/model/backend.h"
#include "engine/workload/workload.h"

#include <string>
#include <vector>

namespace bp::bench {

struct Setup {
    WorkloadSpec workload;
    double warmupS = 2, durationS = 10, drainS = 5;
    std::vector<double> rates;
    int typicalLength = 0;    // the ceiling's length: the mean input length (rounded up)
    int typicalNewTokens = 0; // generative
    std::string describe;
};

// The conversation flags (--conversations, --turns, --think-time), beside the load stage's table.
const std::vector<OptionHelp> &conversationOptions();
// The workload flags for `model`. Throws std::invalid_argument on a bad value.
Setup workloadFromArgs(const Args &args, const ModelInfo &model);
// --config FILE and the knob flags on top. Throws std::invalid_argument.
// "0" / "1" items of a switch given as a list (--prefix-cache 0,1); throws
// std::invalid_argument naming the flag otherwise.
std::vector<int> parseSwitchList(const std::string &key, const std::vector<std::string> &items);
BatchingConfig baseConfig(const Args &args);
// The largest batch a config forms.
int batchLimit(const BatchingConfig &c);
// "max 16, 5ms" — the policy's main knobs.
std::string knobs(const BatchingConfig &c);

} // namespace bp::bench
