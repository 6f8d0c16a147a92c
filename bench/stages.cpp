#include "bandwidth_bench.h"
#include "bench_util.h"
#include "device_check_bench.h"
#include "fidelity_bench.h"
#include "load_bench.h"
#include "profile_bench.h"
#include "scheduler_bench.h"
#include "steps_bench.h"
#include "store_bench.h"

namespace bp::bench {

std::vector<const StageOptions *> benchStages()
{
    return {&schedulerStage(), &profileStage(),     &loadStage(),      &storeStage(),
            &fidelityStage(),  &deviceCheckStage(), &bandwidthStage(), &stepsStage()};
}

} // namespace bp::bench
