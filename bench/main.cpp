// batchpilot-bench: Qt-free benchmarks of the BatchPilot engine.
#include "bench_util.h"
#include "load_bench.h"
#include "profile_bench.h"
#include "scheduler_bench.h"
#include "store_bench.h"

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
                 "              --instances N (1) --saturate --json FILE\n"
                 "  profile     model latency over batch size x padded length: the ceiling\n"
                 "              --model NAME|FILE.pt (builtin:tiny-decoder) --preset P (small) --device D (auto)\n"
                 "              --threads N (0 = all) --batches 1,2,4,8,16,32,64 --lengths 16,64,256\n"
                 "              --new-tokens N (16) --warmup N (1) --repeats N (5) --json FILE\n"
                 "  load        open-loop arrivals against each policy in turn (fresh engine each)\n"
                 "              model flags as profile; --rate R (50) | --rates R1,R2,.. (--rates-POLICY R1,..)\n"
                 "              --arrivals poisson|gamma|constant|bursts --burstiness CV2 (gamma)\n"
                 "              --length L (64) | --min-length --max-length\n"
                 "              --max-new-tokens N (16) | --trace FILE.csv --time-scale X --length-scale X\n"
                 "              --length-cap N --output-cap N (256) --workload-seed S (1)\n"
                 "              --duration S (10) --warmup S (2) --drain S (5)\n"
                 "              --compare none,static,dynamic,bucketed (dynamic) --config FILE.json --max-batch N\n"
                 "              --delay-us U --buckets 64,128,.. --static-batch N --static-length L --instances N\n"
                 "              --queue N (4096) --ceiling PROFILE.json | --no-ceiling --p99-budget-ms B --json FILE\n"
                 "  store       trace store: logging rate, serving overhead of logging, trace import time\n"
                 "              --part rate|overhead|import|all (all) --seconds S (3) --batch N (32)\n"
                 "              --rows-per-s R (200000) --producers P (1) --rounds N (3)\n"
                 "              --trace FILE (the shared Azure trace) --repeat N (5) --json FILE\n"
                 "              overhead: --model M (builtin:echo) --preset P --device D --length L (16)\n"
                 "              --new-tokens N (0) --max-batch N (64) --queue-rows N (sink queue capacity)\n"
                 "              --writer nice|idle|normal (nice): the writer thread's CPU priority\n";
}
} // namespace

int main(int argc, char **argv)
{
    if (argc == 2 && !std::strcmp(argv[1], "--version")) { // for help2man (the manual page) and bug reports
        std::cout << "batchpilot-bench " BATCHPILOT_VERSION "\n";
        return 0;
    }
    if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
        usage();
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
    } catch (const std::exception &e) {
        std::cerr << "batchpilot-bench " << stage << ": " << e.what() << "\n";
        return 2;
    }
    std::cerr << "batchpilot-bench: unknown stage '" << stage << "'\n";
    usage();
    return 2;
}
