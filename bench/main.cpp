// batchpilot-bench: Qt-free benchmarks of the BatchPilot engine.
#include "bench_util.h"

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
    const bp::bench::StageOptions *options = bp::bench::findStage(stage);
    if (!options) {
        std::cerr << "batchpilot-bench: unknown stage '" << stage << "'\n";
        usage(std::cerr);
        return 2;
    }
    try {
        const bp::bench::Args args(argc, argv, 2, *options);
        return bp::bench::runStage(*options, args);
    } catch (const std::exception &e) {
        std::cerr << "batchpilot-bench " << stage << ": " << e.what() << "\n";
        return 2;
    }
}
