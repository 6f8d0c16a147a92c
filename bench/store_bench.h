// batchpilot-bench store: the trace store's logging rate, what logging costs
// serving, and the import time of a trace. Qt-free.
#pragma once

#include "bench_util.h"

namespace bp::bench {

int runStoreBench(const Args &args);
const StageOptions &storeStage();

} // namespace bp::bench
