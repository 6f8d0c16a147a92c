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

namespace {

struct Stage {
    const StageOptions &(*options)();
    int (*run)(const Args &);
};

// In the order `batchpilot-bench --help` lists them.
const std::vector<Stage> &stages()
{
    static const std::vector<Stage> all{
        {&schedulerStage, &runSchedulerBench}, {&profileStage, &runProfileBench},
        {&loadStage, &runLoadBench},           {&storeStage, &runStoreBench},
        {&fidelityStage, &runFidelityBench},   {&deviceCheckStage, &runDeviceCheckBench},
        {&bandwidthStage, &runBandwidthBench}, {&stepsStage, &runStepsBench},
    };
    return all;
}

} // namespace

std::vector<const StageOptions *> benchStages()
{
    std::vector<const StageOptions *> out;
    for (const Stage &s : stages())
        out.push_back(&s.options());
    return out;
}

const StageOptions *findStage(const std::string &name)
{
    for (const Stage &s : stages())
        if (s.options().name == name)
            return &s.options();
    return nullptr;
}

int runStage(const StageOptions &stage, const Args &args)
{
    for (const Stage &s : stages())
        if (&s.options() == &stage)
            return s.run(args);
    return 2; // not a stage of this table: findStage() never returns one
}

} // namespace bp::bench
