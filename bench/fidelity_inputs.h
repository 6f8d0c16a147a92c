// The inputs of `batchpilot-bench fidelity` (fidelity_bench.h): the configs
// it replays, the two traces it builds (a window of the Azure trace re-timed,
// an on/off bursty one), and the figures it compares.
#pragma once

#include "engine/core/batching_config.h"
#include "engine/model/backend.h"
#include "engine/workload/trace_csv.h"
#include "engine/workload/trace_rows.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bp {
class TraceStore;
}

namespace bp::bench {

struct NamedConfig {
    std::string name;
    BatchingConfig config;
};
// Every request-level policy, batch sizes, delays, 2 instances, the adaptive
// delay; with `steps` (a model with step-level generation) two continuous
// configs. `longest`: static's padded length.
std::vector<NamedConfig> fidelityConfigs(int longest, bool steps);

// sim / real − 1 (0 when real is not positive).
double relError(double sim, double real);

// Time to first token and time per output token (each request's own, as
// recorded: timePerOutputToken(), engine/core/request.h), p50 (ms) over
// completed requests.
struct TokenFigures {
    double ttftP50 = 0, tpotP50 = 0;
};
TokenFigures tokenPercentiles(const TraceStore &store, std::int64_t session);

// The load average over the last minute (0 when unknown).
double loadAverage();

// The rows of a replayable trace: `rows` re-timed so that they span
// `seconds`, lengths scaled and clamped to the model.
std::vector<TraceRow> fitTrace(std::vector<TraceRow> rows, double seconds, double lengthScale,
                               const ModelInfo &m);

// On/off bursts: `rate` on average, three times that for 0.3 s, then a
// quiet stretch; lengths log-uniform.
std::vector<TraceRow> burstyRows(std::size_t n, double rate, int maxLength, std::uint64_t seed);

// --prefix: policy continuous with the KV prefix cache
// off, on (block 16) and on under a KV budget that evicts.
std::vector<NamedConfig> prefixConfigs();

// A shared system prompt: every request starts with the same
// `systemTokens` (16-token blocks, hash ids 1, 2, ...), then 16-48 tokens of
// its own (blocks of ids of its own) and wants 8-24 new tokens; Poisson
// arrivals at `rate`. A trace whose reuse the replayer and the simulator
// both see (prefix_tokens.h).
struct PrefixTrace {
    std::vector<TraceRow> rows;
    std::vector<PrefixBlocks> ids;
    int blockTokens = 16;
};
PrefixTrace sharedPromptTrace(std::size_t n, double rate, int systemTokens, std::uint64_t seed);

} // namespace bp::bench
