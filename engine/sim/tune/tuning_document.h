// The JSON document of a finished search, one shape for every producer:
// `batchpilot tune` prints it with --json and stores it, the console's
// Advisor dock stores it, and the report's Recommendation section reads it
// (app/report/report_recommendation.h). Keys are documented in
// docs/tuning.md.
#pragma once

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/tune/tuner.h"

#include "engine/replay/replayer.h"
#include "engine/store/tuning_store.h"

#include <nlohmann/json.hpp>

#include <string>

namespace bp {

// What was searched, besides the result itself.
struct TuningContext {
    ReplaySource source;
    std::size_t requests = 0; // the planned arrivals
    double offeredPerS = 0;   // their rate
    double speed = 1, lengthScale = 1;
    std::size_t limit = 0;
    TuneSlo slo;
    TuneObjective objective = TuneObjective::Goodput;
    int jobs = 1;
    std::string origin; // "" = the command line; "console advisor"
};

// One candidate's figures (null where a figure is not a number).
nlohmann::json tuneFiguresJson(const TuneFigures &figures);

// The document without the candidates: the search, the Pareto front and the
// recommendation with its predicted figures and capacity. Requires
// result.recommended.
nlohmann::json tuningDocument(const TuneResult &result, const TuningContext &context,
                              const Calibration &calibration);

// A row of the `tunings` table for `document`.
StoredTuning storedTuning(const nlohmann::json &document, const TuningContext &context,
                          const Calibration &calibration);

} // namespace bp
