// Fleet planning (`batchpilot plan`): how many replicas of the
// calibrated model, behind which router, a trace needs to meet an SLO in
// each window of it (an hour by default), and at k× its rate. The search
// is capacity_plan.h's; each point is judged by simulating the window's
// arrivals on a fleet (simulator.h, SimulatorOptions::replicas) and
// checking the SLO over every request of the window (tuner.h figuresOf:
// a request that failed counts as infinitely late).
//
// Memory: a trace is streamed from SQLite window by window
// (TraceStore::traceWindowStarts, traceSlice); a worker holds one window's
// arrivals at a time. A session's arrivals are read whole (sessions are an
// engine's own recordings, far smaller than a week of production traffic).
// Each window is simulated from empty replicas (no queue carried over from
// the window before).
//
// The result: per window the replicas, router and figures; a schedule by
// hour of day (each slot the most any day needed, when windows divide a
// day); cost per hour and per 1M output tokens with a replica's price.
#pragma once

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/fleet/capacity_plan.h"
#include "engine/sim/tune/tuner.h"

#include "engine/replay/replayer.h"

#include <nlohmann/json.hpp>

namespace bp {

class TraceStore;

struct FleetPlanRequest {
    ReplaySource source;
    Duration window = std::chrono::hours(1);
    double rateScale = 1; // every gap divided by it
    TuneSlo slo;
    BatchingConfig config; // each replica's (validated by the caller)
    CapacitySearch search;
    int routerQueueLimit = 0; // SimulatorOptions::routerQueueLimit
    double replicaCostPerHour = 0;
    CostNoise noise = CostNoise::Drawn;
    std::uint64_t noiseSeed = 1;
};

struct PlannedWindow {
    WindowChoice choice;
    double beginS = 0, lengthS = 0; // in the trace's time
    std::size_t requests = 0;
    std::int64_t outputTokens = 0; // asked for by the window's requests
};

struct FleetPlan {
    std::vector<PlannedWindow> windows;
    // Hour-of-day slots (window length; empty when a day is not a whole
    // number of windows or the trace spans less than a day): the most
    // replicas any day's window in that slot needed.
    std::vector<int> daily;
    int peakReplicas = 0;
    double replicaHours = 0; // Σ replicas × window hours (in real time at rateScale)
    double cost = 0;         // replicaHours × price
    double costPerMillionOutput = 0;
    std::size_t evaluations = 0;
    bool cancelled = false, anyUnmet = false;
    double wallSeconds = 0;
};

// Rows of a trace (from `beginS` on) as the simulator's arrivals: offsets
// from beginS divided by the rate scale, lengths clamped to the model (the
// one length rule, engine/core/length_rule.h, at scale 1), the trace's
// prefix blocks (`blockTokens` each) carried along: the router keys on
// them, and with prefix_cache.enabled the replicas' caches hit on them.
std::vector<PlannedArrival> traceArrivals(const std::vector<TraceRow> &rows,
                                          std::vector<PrefixBlocks> &&hashIds, int blockTokens, double beginS,
                                          double rateScale, const SimulatorOptions &model);

// NotFound for an unknown source, InvalidArgument for an SLO without bounds
// or an empty source.
Result<FleetPlan> planFleet(const TraceStore &store, const Calibration &calibration,
                            const FleetPlanRequest &request);

// The plan as `plan --json` prints it and the store keeps it.
nlohmann::json planDocument(const FleetPlan &plan, const FleetPlanRequest &request,
                            const Calibration &calibration);

} // namespace bp
