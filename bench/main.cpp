// batchpilot-bench: Qt-free benchmarks of the BatchPilot engine.
#include "bench_util.h"
#include "scheduler_bench.h"

#include <cstring>
#include <exception>
#include <iostream>

namespace {
void usage()
{
    std::cout << "usage: batchpilot-bench STAGE [options]\n\n"
                 "stages:\n"
                 "  scheduler   engine overhead with builtin:echo\n"
                 "              --rate R (50000) --producers P (1) --duration S (5) --warmup S (1)\n"
                 "              --policy dynamic --max-batch N (64) --delay-us U (100) --length L (16)\n"
                 "              --instances N (1) --saturate --json FILE\n";
}
} // namespace

int main(int argc, char **argv)
{
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    const std::string stage = argv[1];
    try {
        bp::bench::Args args(argc, argv, 2);
        if (stage == "scheduler")
            return bp::bench::runSchedulerBench(args);
    } catch (const std::exception &e) {
        std::cerr << "batchpilot-bench " << stage << ": " << e.what() << "\n";
        return 2;
    }
    std::cerr << "batchpilot-bench: unknown stage '" << stage << "'\n";
    usage();
    return 2;
}
