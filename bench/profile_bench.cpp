// batchpilot-bench profile --model NAME|FILE.pt [--preset P] [--device D]
//   [--threads N] [--batches 1,2,4,...] [--lengths 16,64,256]
//   [--new-tokens N] [--warmup N] [--repeats N] [--json FILE]
#include "profile_bench.h"

#include "model_profile.h"

#include <algorithm>
#include <cstdio>
#include <iostream>

namespace bp::bench {

const StageOptions &profileStage()
{
    static const StageOptions stage = [] {
        StageOptions s{
            "profile", "[OPTIONS]", "model latency over batch size x padded length: the ceiling",
            "Runs the model offline (no scheduler, no queue) on every cell of the grid and prints the\n"
            "median latency, throughput and, per length, the ceiling: the best throughput over batch\n"
            "sizes (sequences/s; generated tokens/s for a decoder). --json saves the profile that\n"
            "`load --ceiling` reads.",
            modelOptions()};
        s.options.insert(s.options.end(),
                         {
                             {"batches", "B1,B2,..", "batch sizes (default 1,2,4,8,16,32,64)"},
                             {"lengths", "L1,L2,..", "padded lengths in tokens (default 16,64,256)"},
                             {"new-tokens", "N", "decoders: tokens generated per sequence (default 16)"},
                             {"warmup", "N", "untimed runs per cell (default 1)"},
                             {"repeats", "N", "timed runs per cell; the median is reported (default 5)"},
                             {"idle-ms", "MS",
                              "sleep MS before each run, as a server starts a batch from idle (default 0: "
                              "back to back)"},
                             {"quiet", "", "no per-cell progress on stderr"},
                             {"json", "FILE", "write the profile as JSON"},
                         });
        return s;
    }();
    return stage;
}

int runProfileBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, profileStage()); rc >= 0)
        return rc;
    const ModelSpec spec = modelSpecFromArgs(args);
    ProfileOptions options;
    options.batchSizes = parseIntList("batches", args.list("batches", "1,2,4,8,16,32,64"));
    options.lengths = parseIntList("lengths", args.list("lengths", "16,64,256"));
    options.newTokens = int(args.num("new-tokens", 16));
    options.warmup = int(args.num("warmup", 1));
    options.repeats = int(args.num("repeats", 5));
    options.idleMs = int(args.num("idle-ms", 0));
    if (options.newTokens < 1 || options.warmup < 0 || options.repeats < 1) {
        std::cerr << "batchpilot-bench profile: --new-tokens and --repeats must be >= 1, --warmup >= 0\n";
        return 2;
    }

    auto backend = createBackend(spec);
    if (!backend) {
        std::cerr << "batchpilot-bench profile: " << backend.status().toString() << "\n";
        return 1;
    }
    // A paged decoder's KV cache for the grid's largest batch (each of the
    // model's full length, within the CPU's cap), as an engine of that many
    // sequences sizes it: not the gigabytes an unbounded one would reserve.
    const int largest = options.batchSizes.empty()
                            ? 0
                            : *std::max_element(options.batchSizes.begin(), options.batchSizes.end());
    if (Status s = (*backend)->prepareKv({0, 0.9, 16, largest}); !s && s.code() != StatusCode::Unavailable) {
        std::cerr << "batchpilot-bench profile: " << s.toString() << "\n";
        return 1;
    }
    auto profile = profileBackend(**backend, spec, options, !args.has("quiet"));
    if (!profile) {
        std::cerr << "batchpilot-bench profile: " << profile.status().toString() << "\n";
        return 1;
    }
    std::printf("batchpilot-bench profile  warm-up %d, %d timed runs per cell (median)\n", options.warmup,
                options.repeats);
    printProfile(*profile);

    if (args.has("json")) {
        nlohmann::json j = toJson(*profile);
        j["warmup"] = options.warmup;
        j["repeats"] = options.repeats;
        if (int rc = writeJsonOption(args, j); rc != 0)
            return rc;
    }
    return 0;
}

} // namespace bp::bench
