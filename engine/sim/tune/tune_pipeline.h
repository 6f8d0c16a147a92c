// The tune pipeline: the one assembly of a tuning that
// `batchpilot tune` (app/cmd_tune.cpp), the console's Advisor
// (ui/advisor_search.cpp) and the simulated replay (simulated_replay.cpp)
// call, instead of three copies. Five stages:
//
//   1. plan the source   planTuneSource(): the replay's arrivals (speed,
//                        length scale, limit, clamped to the model), its
//                        config, its rate;
//   2. calibrate         chooseCalibration(): the cost model (an id, a
//                        file, or the newest for a model key);
//   3. search            searchConfigs(): tune() over the simulation;
//   4. verify            planVerification() + verifyRecommendation()
//                        (tune_verify.h): a real-clock replay of a window;
//   5. store             storeSearch() / storeVerification(): `tunings`.
//
// runTunePipeline() runs 1, 3, 5 and 4 in order with progress callbacks and
// a cancel flag: cancelled during the search, it stores what was evaluated
// and does not verify; cancelled during the verification, it keeps the
// partial verification (stored, marked partial).
//
// Threading: every function blocks the calling thread; the callbacks run on
// it (verifyProgress on the replay's thread: the same one); `cancel` may be
// set from any thread or a signal handler. Qt-free.
#pragma once

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/simulation/simulator.h"
#include "engine/sim/tune/sim_interval.h"
#include "engine/sim/tune/tune_verify.h"
#include "engine/sim/tune/tuner.h"
#include "engine/sim/tune/verify_window.h"

#include "engine/replay/replay_plan.h"
#include "engine/workload/prefix_tokens.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace bp {

// --- 1. the source ---------------------------------------------------------

// The source as the replay would send it, under a calibration's model.
struct TuneSource {
    ReplayOptions replay; // source, config, speed, length scale, limit (the clock is not used)
    ReplayPlan plan;
    std::string name;       // "trace 1 'azure'", "session 4"
    double spanS = 0;       // first to last planned arrival
    double offeredPerS = 0; // planned arrivals / span
    // Arrivals longer than the calibration measured (Calibration::measuredLength):
    // their cost is extrapolated.
    std::size_t beyondCalibration = 0;
    // The warning to show when beyondCalibration > 0 ("" otherwise).
    std::string extrapolationWarning(const Calibration &calibration) const;
    // Arrivals [begin, end) for the simulator, numbered and timed as a
    // replay with ReplayOptions::skip = begin sends them (ids from 1; with
    // begin > 0 the offsets count from the first of them).
    std::vector<PlannedArrival> arrivals(std::size_t begin = 0, std::size_t end = SIZE_MAX) const;
    std::vector<int> inputLengths() const;
    std::vector<Duration> offsets() const;
    // The planned prompts' reusable-prefix share (prefix_tokens.h): tokens in
    // blocks seen before (hash ids, a conversation's resent context) over
    // all prompt tokens. Shown before a search (`tune`, the Advisor).
    PrefixShare prefixShare() const;
};
// "trace 1 'azure'", "session 4"; NotFound for an unknown one.
Result<std::string> describeSource(const TraceStore &store, const ReplaySource &source);
// NotFound / InvalidArgument as planReplay() says them.
Result<TuneSource> planTuneSource(const TraceStore &store, const ReplayOptions &options,
                                  const Calibration &calibration);

// How a simulation counts a request's output for the calibration's model.
OutputKind outputKindOf(const Calibration &calibration);
// The simulator's view of the calibration's model: limits, cost model,
// output kind, positions, with `noise` charged (seeded). The caller sets
// the config, the observer and the rest.
SimulatorOptions simulatorOptionsFor(const Calibration &calibration, CostNoise noise, std::uint64_t seed = 1);

// --- 2. the calibration ----------------------------------------------------

struct CalibrationChoice {
    std::string ref; // an id in the store or a JSON file; empty: the newest for the key below
    std::string model, preset, device; // empty preset/device: any
    std::optional<int> threads;
    std::string dtype; // empty: any
};
// NotFound says which `batchpilot calibrate` to run.
Result<Calibration> chooseCalibration(const TraceStore &store, const CalibrationChoice &choice);

// --- 3. the search ---------------------------------------------------------

struct TuneSettings {
    TuneSlo slo;
    TuneObjective objective = TuneObjective::Goodput;
    std::size_t budget = 240;
    int maxInstances = 2;
    int threads = 1;
    CostNoise noise = CostNoise::Drawn;
    std::uint64_t noiseSeed = 1;
};
Result<TuneResult> searchConfigs(const TuneSource &source, const Calibration &calibration,
                                 const TuneSettings &settings,
                                 const std::function<void(std::size_t, std::size_t)> &progress = {},
                                 const std::atomic<bool> *cancel = nullptr);

// --- 5. storing ------------------------------------------------------------

struct StoredSearch {
    std::int64_t tuningId = 0;
    nlohmann::json document; // tuningDocument() + "tuning_id"
};
// `origin`: "" for the command line, "console advisor", ...; requires
// result.recommended.
Result<StoredSearch> storeSearch(const TraceStore &store, const TuneSource &source,
                                 const Calibration &calibration, const TuneSettings &settings,
                                 const TuneResult &result, const std::string &origin);
// Adds the verification to tuning `tuningId` (its session, its figures,
// partial or not); `document` (the stored one) gets it too.
Status storeVerification(const TraceStore &store, std::int64_t tuningId, const Verification &verification,
                         nlohmann::json &document);

// --- the whole pipeline ----------------------------------------------------

struct TuneRequest {
    ReplayOptions source; // source, config (the knobs not searched), speed, length scale, limit
    TuneSettings settings;
    bool verify = true;            // needs a backend of the calibration's model
    VerifyWindowSpec verifyWindow; // default: the busiest 3 minutes
    std::string origin;            // stored with the result
};

struct TuneHooks {
    std::function<void(std::size_t done, std::size_t total)> searchProgress;
    // Before the real-clock replay starts: its window and expected duration.
    std::function<void(const VerifyPlan &)> verifyStarting;
    Replayer::ProgressFn verifyProgress;
    const std::atomic<bool> *cancel = nullptr;
};

struct TuneRun {
    Calibration calibration;
    TuneSource source;
    TuneSettings settings;
    TuneResult result;
    StoredSearch stored;                      // tuningId 0: nothing to store (no recommendation)
    std::optional<Verification> verification; // verified (possibly partially)
    // The recommendation's latency with the calibration's fit spread carried
    // through (sim_interval.h); none when the fit has no error for its units.
    std::optional<SimulatedInterval> interval;
};

// What the search simulates: the source's arrivals, the calibration's model
// and, for a remote calibration, its per-request path outside the steps.
TuneWorkload tuneWorkloadFor(const TuneSource &source, const Calibration &calibration,
                             const TuneSettings &settings);

// Stages 1, 3, 5 and (request.verify, a recommendation, not cancelled) 4.
// `backend` runs the verification: the calibration's model.
Result<TuneRun> runTunePipeline(const std::shared_ptr<TraceStore> &store, const Calibration &calibration,
                                const TuneRequest &request, const std::shared_ptr<Backend> &backend,
                                const TuneHooks &hooks = {});

// Stage 4 (and its storing) for a run already searched: verifies `config`
// (a candidate of run.result) over `window`; run.verification and
// run.stored.document are updated. The Advisor verifies on demand.
Result<Verification> verifyRun(const std::shared_ptr<TraceStore> &store,
                               const std::shared_ptr<Backend> &backend, TuneRun &run,
                               const TuneCandidate &candidate, const VerifyWindowSpec &window,
                               const TuneHooks &hooks = {});

} // namespace bp
