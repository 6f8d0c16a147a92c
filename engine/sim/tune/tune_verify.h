// Stage 4 of the tune pipeline (tune_pipeline.h): the recommendation
// replayed for real — the embedded engine, the calibration's model, the
// wall clock — over a window of the source (verify_window.h), and compared
// with its prediction over the same arrivals.
//
// Before it starts, planVerification() simulates the config over the
// window: the predicted figures the measured ones are compared with (the
// search's figures are over the whole source, not the window) and the
// expected wall time (the window's arrivals plus the predicted drain), so
// a caller can say up front how long it will take.
//
// Cancelled (Ctrl+C, the Advisor's Cancel), the replay stops submitting,
// fails what is queued and ends its session; the verification is then
// partial: both figures cover the requests that were sent and did not end
// because of the cancel (shutting_down), predicted over the same arrivals.
#pragma once

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/tune/tuner.h"
#include "engine/sim/tune/verify_window.h"

#include "engine/replay/replayer.h"

#include <nlohmann/json.hpp>

namespace bp {

struct TuneSource;
struct TuneSettings;

struct VerifyPlan {
    VerifyWindowSpec spec;
    VerifyWindow window;            // arrivals of the source's plan
    std::size_t sourceRequests = 0; // the source's planned arrivals
    BatchingConfig config;
    std::string label;
    TuneFigures predicted;      // the config simulated over the window alone
    double expectedSeconds = 0; // the window's arrivals plus the predicted drain
};
VerifyPlan planVerification(const TuneSource &source, const Calibration &calibration,
                            const TuneSettings &settings, const TuneCandidate &candidate,
                            const VerifyWindowSpec &window);

struct Verification {
    VerifyPlan plan;
    ReplayOutcome replay;
    bool partial = false;     // cancelled: the figures cover the arrivals sent before it
    std::size_t compared = 0; // requests both figures cover
    TuneFigures predicted;    // over those requests
    TuneFigures measured;
};

// Replays plan.window of the source for real under plan.config on
// `backend` (the calibration's model), recorded as a session ("tune:
// verifies LABEL ..."). Errors: the replay's or the store's.
Result<Verification> verifyRecommendation(const std::shared_ptr<TraceStore> &store,
                                          const std::shared_ptr<Backend> &backend, const TuneSource &source,
                                          const Calibration &calibration, const TuneSettings &settings,
                                          const VerifyPlan &plan, const Replayer::ProgressFn &progress = {},
                                          const std::atomic<bool> *cancel = nullptr);

// The stored form (tunings.result.verification; docs/tuning.md).
nlohmann::json verificationJson(const Verification &verification);

// A recorded request as the tuner counts it.
TuneSample tuneSampleOf(const StoredRequest &request);

} // namespace bp
