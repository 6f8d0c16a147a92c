// The model's ceiling: latency of one batch over a grid of batch size ×
// padded length, measured offline (no scheduler, no queue). Shared by
// `batchpilot-bench profile` (which prints and saves it) and `load` (which
// reads it back, or measures a small grid inline, to say how close each
// policy came). Qt-free and torch-free: it drives any Backend.
#pragma once

#include "bench_util.h"
#include "engine/model/backend.h"
#include "engine/model/model_registry.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace bp::bench {

// --model NAME|FILE.pt (builtin:tiny-decoder), --preset (small), --device
// (auto), --threads (0 = all cores), --seed (1234). Throws
// std::invalid_argument on a malformed number.
ModelSpec modelSpecFromArgs(const Args &args, const std::string &defaultModel = "builtin:tiny-decoder");
// Those flags' rows for a stage's option table.
std::vector<OptionHelp> modelOptions();

struct ProfileOptions {
    std::vector<int> batchSizes{1, 2, 4, 8, 16, 32, 64};
    std::vector<int> lengths{16, 64, 256};
    int newTokens = 16; // generative models: tokens generated per sequence
    int warmup = 1;     // untimed runs per cell
    int repeats = 5;    // timed runs per cell
    int idleMs = 0;     // idle before each run (0: back to back; TimingGrid::idleBefore)
    std::uint64_t seed = 1;
};

struct ProfileCell {
    int batch = 0;
    int length = 0;
    double p50Ms = 0, minMs = 0, meanMs = 0; // whole batch, over the timed runs
    // CPU time the process spent per batch (median; all threads summed). On
    // a shared machine it shows what the batch costs without the waits for
    // a core that inflate the wall-clock figures.
    double cpuMs = 0;
    double sequencesPerS = 0;    // batch / p50
    double tokensPerS = 0;       // generated tokens / p50 (generative), else input tokens / p50
    double ttftMs = 0;           // generative: prefill (first token) time, median
    double tpotMs = 0;           // generative: one decode step, median
    double decodeTokensPerS = 0; // generative: batch / tpot, the decode-only rate
};

struct ProfileResult {
    std::string model, preset, device, description;
    std::string dtype = "float32";         // part of the profile's key: the same model in bf16 is another ceiling
    std::int64_t kvBytesPerToken = 0;      // decoders
    std::vector<std::string> notes;        // the model's start-up notes: KV cache, CUDA graphs
    std::int64_t parameters = 0;
    int threads = 0;
    bool generative = false;
    int newTokens = 0;
    std::vector<ProfileCell> cells; // batch-major within each length
};

// Runs the grid. Stops early with the Status of a failed batch.
Result<ProfileResult> profileBackend(Backend &backend, const ModelSpec &spec, const ProfileOptions &options,
                                     bool progress = false);

// THE ceiling, the one definition every figure uses: the highest throughput
// in the profile over all batch sizes, at the profiled length that covers
// `length` (the smallest profiled length >= it, else the longest). It is a
// property of the model and the workload's length, not of a policy: `none`
// (batch 1) is measured against the same ceiling as `dynamic`. Throughput is
// sequences/s for an encoder, generated tokens/s for a decoder. Null when
// the profile is empty.
const ProfileCell *ceilingCell(const ProfileResult &profile, int length);
double ceilingValue(const ProfileResult &profile, const ProfileCell &cell);

// Per length: the best sequences/s and tokens/s over batch sizes.
void printProfile(const ProfileResult &profile);

nlohmann::json toJson(const ProfileResult &profile);
Result<ProfileResult> profileFromJson(const nlohmann::json &json);
Result<ProfileResult> loadProfileFile(const std::string &path);

std::vector<int> parseIntList(const std::string &key, const std::vector<std::string> &items);

} // namespace bp::bench
