// The measurement of `batchpilot-bench fidelity` (fidelity_bench.h):
// profile the model, build the traces, replay each config of each trace
// for real, then simulated under every calibration and cost noise, and
// compare. Qt-free.
#pragma once

#include "bench_util.h"
#include "fidelity_inputs.h"

#include "engine/model/model_registry.h"
#include "engine/sim/calibration/calibration.h"
#include "engine/sim/simulation/cost_backend.h"
#include "engine/store/session_summary.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace bp::bench {

struct FidelityOptions {
    ModelSpec spec;
    double seconds = 3;          // real time of each replay
    double load = 0.3;           // offered load, a fraction of batch-1 capacity
    double lengthScale = 0.125;  // the Azure token counts multiplied
    std::string azurePath;       // the Azure trace
    std::string calibrationMode; // the table's: "profile" or "sessions"
    std::string noiseName;       // the table's: "none", "mean" or "drawn"
    std::size_t configs = 0;     // the first N configs only (0 = all)
    bool fullGrid = false;       // calibrate with the full grid
    bool repeatReal = false;     // every real replay twice: the noise floor
    bool prefix = false;         // one prefix-heavy trace instead
    int systemPrompt = 128;      // --prefix: the shared prompt's tokens
    std::string dbPath;          // the sessions' trace database
    bool temporaryDb = true;     // removed at the end
};

// One way to simulate: the calibration ("profile" or "sessions") and the
// cost noise, with the |error| of every figure it simulated.
struct FidelityMode {
    std::string calibration;
    CostNoise noise = CostNoise::None;
    std::vector<double> errors;
    std::string name() const; // "sessions/drawn"
};

// One config of one trace, simulated under the chosen mode (the table).
struct FidelityRow {
    std::string trace, config;
    std::size_t requests = 0;
    std::int64_t realSession = 0, simSession = 0;
    SessionSummary real, sim;
    TokenFigures realTokens, simTokens;
    std::vector<std::pair<std::string, double>>
        errors; // sim / real - 1: throughput, p50, p99[, ttft p50[, tpot p50]]
};

struct FidelityResult {
    ModelInfo info;
    int threads = 0;
    Calibration calibration; // the profile alone
    std::vector<FidelityRow> rows;
    std::vector<FidelityMode> modes; // the chosen one first
    std::vector<double> errors;      // |error| of every figure of the table
    double worstValue = 0;
    std::string worstWhere;          // "trace / config / metric"
    std::vector<double> loads;       // the load average before each real replay
    std::vector<double> floorErrors; // --repeat-real: second real run vs first
};

// What the run reports while it runs (a long one shows its progress).
class FidelityObserver {
public:
    virtual ~FidelityObserver() = default;
    virtual void calibrated(const Calibration &calibration, double seconds) = 0;
    virtual void realReplayed(const std::string &trace, const std::string &config) = 0;
    // A trace's real replays are done; its rows follow.
    virtual void tableStarted(bool generative) = 0;
    virtual void rowFinished(const FidelityRow &row, bool generative, bool prefix) = 0;
};

// StageError: rc 2 for a --calibrate/--noise pair that is not a mode and
// for --prefix without a step-level decoder, rc 1 for anything that fails.
StageResult<FidelityResult> runFidelity(const FidelityOptions &options, FidelityObserver &observer);

} // namespace bp::bench
