// The measurements of `batchpilot-bench store` (store_bench.h), one per
// part. Each works on databases in a temporary folder that the caller owns.
//  rate      the TraceSink's writer alone: synthetic batches of `batch`
//            requests pushed (a) as fast as the queue takes them — the
//            writer's ceiling — and (b) paced at `rowsPerS` request rows
//            for `seconds`, reporting what was written and dropped;
//  overhead  a model (builtin:echo by default) served at saturation by
//            `producers` threads, with logging off and on in alternating
//            rounds, medians of completed requests/s and their ratio;
//  import    importing a trace into a fresh store `repeat` times.
#pragma once

#include "bench_util.h"

#include "engine/model/backend.h"
#include "engine/model/model_registry.h"
#include "engine/store/trace_sink.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bp::bench {

using WriterPriority = TraceSinkOptions::WriterPriority;

// A folder under the system's temporary one, removed with everything in it.
struct TempDir {
    std::filesystem::path path;
    TempDir();
    ~TempDir();
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    // path / name, any old file of that name removed first.
    std::string fresh(const std::string &name) const;
};

// One push run of the writer.
struct RateResult {
    double seconds = 0;
    std::uint64_t requestRows = 0, batchRows = 0, written = 0, dropped = 0;
    double writerCpuS = 0;
    double pushSeconds = 0; // time spent inside onBatchCompleted (what an executor thread pays)
};
struct RatePart {
    int batch = 32;
    double seconds = 3;
    double rowsPerS = 200000;
    RateResult max, paced; // flat out, then paced at rowsPerS
};
RatePart measureRate(const TempDir &tmp, int batch, double seconds, double rowsPerS, WriterPriority priority);

struct ServingSetup {
    std::shared_ptr<Backend> backend;
    int producers = 1;
    int length = 16;
    int newTokens = 0;
    double seconds = 3;
    int maxBatch = 64;
    std::size_t queueRows = 0; // sink queue capacity; 0 = default
    WriterPriority priority = WriterPriority::Nice;
};
struct OverheadPart {
    ModelSpec spec;
    ServingSetup setup;
    int rounds = 3;
    std::vector<double> off, on, ratios; // requests/s per round; on / off per round
    double medianOff = 0, medianOn = 0, medianRatio = 0;
    std::uint64_t dropped = 0; // rows dropped at the sink, every round
};
// The model the overhead part serves; StageError (rc 2) when it cannot be made.
StageResult<std::shared_ptr<Backend>> servingBackend(const ModelSpec &spec);
// setup.backend: from servingBackend().
OverheadPart measureOverhead(const TempDir &tmp, const ModelSpec &spec, ServingSetup setup, int rounds);

struct ImportPart {
    std::string trace;
    std::uint64_t rows = 0;
    std::vector<double> seconds; // one per import
};
StageResult<ImportPart> measureImport(const TempDir &tmp, const std::string &trace, int repeat);

} // namespace bp::bench
