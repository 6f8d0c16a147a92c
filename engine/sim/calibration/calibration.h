// Calibration: a cost model (cost_model.h) for one model + device + preset +
// threads, with the facts a simulation needs about the model (its limits,
// whether it generates) and the fit's residual error, so that a simulated
// replay can run without loading the model and say how far to trust it.
//
// Sources of measurements:
//  - measureBackend(): a profile grid (batch × padded length, and for a
//    generative model the prefill and the mean decode step of each cell;
//    for a model with step-level generation, iterations of StepModel::step:
//    decodes over running sequences at each context, with and without a
//    prompt chunk joining), what `batchpilot calibrate` runs;
//  - sessionObservations(): the batch rows of a recorded session (compute
//    time per batch, with its members' output tokens for a generative
//    model; for a `continuous` session its step rows, each an iteration of
//    its items and tokens), and the per-batch serving overhead the profile
//    cannot see.
//
// Stored in the trace database's `calibrations` table (calibration_store.h)
// and exported/imported as JSON (toJson / calibrationFromJson).
#pragma once

#include "engine/sim/calibration/cost_model.h"
#include "engine/sim/calibration/remote_calibration.h"

#include "engine/core/clock.h"
#include "engine/core/result.h"
#include "engine/model/backend.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bp {

class TraceStore;

struct Calibration {
    std::int64_t id = 0; // 0 = not stored
    std::int64_t createdAtUs = 0;
    // The key: what the measurements are valid for.
    std::string model;  // "builtin:tiny-decoder", a .pt path, ...
    std::string preset; // built-in models; empty otherwise
    std::string device;
    std::string dtype = "float32"; // the same model in bfloat16 is another model to time
    std::string architecture;      // ModelInfo::architecture ("Qwen2ForCausalLM"), informational
    int threads = 0;
    // The model's facts (ModelInfo) a simulation needs.
    int vocabSize = 256;
    int maxSequenceLength = 1024;
    bool generative = false;
    int maxNewTokensLimit = 0;
    int positions = 0;           // generative: input + new tokens must fit (0 = no limit)
    std::int64_t parameters = 0; // the model's weights (ModelInfo::parameters); 0 = unknown

    CostModel cost;
    FitError error;          // every observation
    FitError batchError;     // whole batches: what a simulation charges
    FitError iterationError; // generation steps (policy continuous)
    std::string source;      // "profile (quick)", "session 7", ...
    std::size_t observations = 0;
    // A remote server calibrated from outside (`calibrate --target`): its
    // URL and kind (the key beside `model`, its name there), its settings,
    // the limits it showed and the probe's rows. Empty for the embedded engine.
    std::optional<RemoteCalibration> remote;
    // The longest padded length among the measured batches (0: unknown). A
    // longer input's cost is extrapolated from the fit: past a cache cliff it
    // can be several times the prediction (docs/simulation.md).
    int measuredLength = 0;
    // The profile's run-to-run spread: the median over its cells of (max −
    // min) / median of the repeated timings of one batch (statistics.h).
    // -1: unknown (no profile, or made before it was kept).
    double runSpread = -1;

    // The key and the facts of a loaded model (`preset` for built-ins).
    static Calibration forModel(const ModelInfo &info, const std::string &preset, int threads);
    ModelInfo modelInfo() const;
    // The bytes of the model's weights (parameters at the dtype's width):
    // what a new replica loads before it serves. 0 when unknown (a remote
    // calibration, or one made before parameters were kept).
    std::int64_t weightBytes() const;
    // "builtin:tiny-decoder (small, cpu, 2 threads)"; a remote one:
    // "llama at http://gpu:8000 (vllm)"
    std::string describe() const;
};

struct CalibrationGrid {
    std::vector<int> batchSizes{1, 2, 4, 8, 16, 32};
    std::vector<int> lengths{16, 64, 128, 256, 512};
    std::vector<int> newTokens{4, 16}; // generative: two values separate prefill from decode
    // A model with step-level generation (Backend::steps()): iterations of
    // `stepSequences` running sequences at each of `lengths` (a decode step,
    // and one with a prompt chunk of `stepChunk` tokens joining), timed
    // like the batches.
    std::vector<int> stepSequences{1, 4, 16, 32};
    int stepChunk = 64;
    int warmup = 1;
    int repeats = 3;
    std::uint64_t seed = 1;
    // A smaller grid for a first answer in seconds.
    static CalibrationGrid quick();
};

struct CalibrationProgress {
    std::size_t done = 0, total = 0;
    int batch = 0, length = 0, newTokens = 0;
    double seconds = 0; // the cell's median
};

// Runs the grid on `backend` (timeBackend(), backend_timing.h; lengths
// above the model's maximum are skipped). Each whole-batch observation
// carries its cell's run-to-run spread. Cancel stops between cells with
// InvalidArgument "cancelled". `clock` times the runs (tests: a FakeClock).
Result<std::vector<CostObservation>>
measureBackend(Backend &backend, const CalibrationGrid &grid,
               const std::function<void(const CalibrationProgress &)> &progress = {},
               const std::atomic<bool> *cancel = nullptr, const Clock &clock = RealClock::instance());

// What an idle engine pays to start a batch beyond what a warm one pays:
// `probes` pairs of one request (batch 1) through a real Engine (policy
// none) on `backend`, the first after `idle` of nothing, the second straight
// after it; each sample is the first's end to end time minus the second's
// (seconds, >= 0). It holds the scheduler's wake-up and the slower first run
// of a cold core — what a profile timed back to back cannot see and a server
// between arrivals pays on every batch (docs/simulation.md, "Scheduler
// lateness"). Lengths cycle through `lengths`.
Result<std::vector<double>> measureIdleStart(const std::shared_ptr<Backend> &backend,
                                             const std::vector<int> &lengths, int probes = 32,
                                             Duration idle = std::chrono::milliseconds(50));

// The profile part of a calibration, as `batchpilot calibrate` and the
// fidelity bench take it: the grid (measureBackend), the contention probe
// (measureConcurrency, into key.cost.concurrency) and the idle-start probe
// (measureIdleStart, into key.cost.dispatchLateness: the simulator charges
// it to every unit an idle executor starts). Returns the grid's observations for calibrate().
Result<std::vector<CostObservation>>
measureProfile(const std::shared_ptr<Backend> &backend, const CalibrationGrid &grid, Calibration &key,
               const std::function<void(const CalibrationProgress &)> &progress = {},
               const std::atomic<bool> *cancel = nullptr);

// Contention between executors: a mid-size batch (4 × length 128, 8 new
// tokens for a decoder) run alone, then on k threads at once for k = 2 ..
// maxUnits; the median time of each relative to alone (>= 1), for
// CostModel::concurrency.
Result<std::vector<double>> measureConcurrency(Backend &backend, int maxUnits = 4, int repeats = 6);

struct SessionObservations {
    // One per ok batch with a positive compute time that ran alone: a batch
    // that overlapped another executor's is left out (its time includes
    // the contention that CostModel::concurrency charges apart).
    std::vector<CostObservation> batches;
    std::size_t overlapped = 0;
    // The serving path's own cost per request-level batch: the median
    // hand-off (dispatch to start) plus the median gap between a batch's
    // end and the dispatch of the next one on its executor when that one
    // was ready before (it waited only for the executor). 0 when unknown
    // (overheadSamples 0: no such pair of batches).
    double overheadS = 0;
    std::size_t overheadSamples = 0;
    // The same per step of policy `continuous`: the median gap between a
    // step's end and the dispatch of the next step on its executor when
    // that step has decodes (its sequences were running at the end of the
    // one before, so nothing but the serving path kept it waiting).
    double stepOverheadS = 0;
    std::size_t stepOverheadSamples = 0;
    // Scheduler lateness (dispatched − intended, seconds) of every
    // request-level batch that fell due while its executor was idle: the
    // samples of CostModel::dispatchLateness (sampleQuantiles).
    std::vector<double> lateness;
};
Result<SessionObservations> sessionObservations(const TraceStore &store, std::int64_t sessionId,
                                                bool generative);

// Fits the cost model to `observations`; everything else (key, facts,
// source, cost.overheadS, cost.stepOverheadS, cost.dispatchLateness,
// cost.concurrency) is taken from `key`.
Result<Calibration> calibrate(const Calibration &key, std::span<const CostObservation> observations);

// Interference: a calibration measured while other
// work shared the cores fits badly and times the same batch differently
// from run to run. Past either limit the calibration is suspect.
inline constexpr double kInterferenceFitError = 0.25; // median relative error over whole batches
inline constexpr double kInterferenceSpread = 0.20;   // median run-to-run spread of the profile's cells
// The warning to show with `c` (what gives it away, and how to get a clean
// calibration: the command to run again on a quiet machine); nullopt when
// neither limit is passed.
std::optional<std::string> interferenceWarning(const Calibration &c);

nlohmann::json toJson(const Calibration &c);
Result<Calibration> calibrationFromJson(const nlohmann::json &json);
Result<Calibration> loadCalibrationFile(const std::string &path);

} // namespace bp
