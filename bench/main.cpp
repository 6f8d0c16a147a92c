// batchpilot-bench: Qt-free benchmarks of the BatchPilot engine.
#include "bandwidth_bench.h"
#include "bench_util.h"
#include "device_check_bench.h"
#include "fidelity_bench.h"
#include "load_bench.h"
#include "profile_bench.h"
#include "scheduler_bench.h"
#include "steps_bench.h"
#include "store_bench.h"

#include <cstring>
#include <exception>
#include <iostream>

namespace {
void usage(std::ostream &out)
{
    out << "Usage: batchpilot-bench STAGE [OPTIONS]\n"
           "Qt-free benchmarks of the BatchPilot engine; each stage prints its figures, --json FILE saves "
           "them.\n\n"
           "Stages:\n";
    for (const auto *stage : bp::bench::benchStages())
        out << "  " << stage->name << std::string(stage->name.size() < 13 ? 14 - stage->name.size() : 2, ' ')
            << stage->summary << "\n";
    out << "\nOptions:\n"
           "  --help      print this help and exit; STAGE --help prints the stage's options\n";
}
} // namespace

int main(int argc, char **argv)
{
    if (argc == 2 && !std::strcmp(argv[1], "--version")) { // for help2man (the manual page) and bug reports
        std::cout << "batchpilot-bench " BATCHPILOT_VERSION "\n";
        return 0;
    }
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        usage(argc < 2 ? std::cerr : std::cout);
        return argc < 2 ? 2 : 0;
    }
    const std::string stage = argv[1];
    try {
        bp::bench::Args args(argc, argv, 2);
        if (stage == "scheduler")
            return bp::bench::runSchedulerBench(args);
        if (stage == "profile")
            return bp::bench::runProfileBench(args);
        if (stage == "load")
            return bp::bench::runLoadBench(args);
        if (stage == "store")
            return bp::bench::runStoreBench(args);
        if (stage == "fidelity")
            return bp::bench::runFidelityBench(args);
        if (stage == "device-check")
            return bp::bench::runDeviceCheckBench(args);
        if (stage == "bandwidth")
            return bp::bench::runBandwidthBench(args);
        if (stage == "steps")
            return bp::bench::runStepsBench(args);
    } catch (const std::exception &e) {
        std::cerr << "batchpilot-bench " << stage << ": " << e.what() << "\n";
        return 2;
    }
    std::cerr << "batchpilot-bench: unknown stage '" << stage << "'\n";
    usage(std::cerr);
    return 2;
}
