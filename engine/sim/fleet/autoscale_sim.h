// Autoscaling over time (`batchpilot autoscale
// --trace`): a policy (autoscaler.h) turned on the virtual clock over a whole
// trace, on a fleet whose replicas start cold and drain
// (engine/sim/simulation/fleet_scaling.h), and judged window by window:
//
//  - the replicas over time: at each decision that saw or asked for
//    something new, the fleet as it saw it (serving, starting, draining)
//    and what the policy wanted;
//  - per window (serving time, `windowS`; 5 min by default): the requests
//    that arrived in it, the p99s of TTFT, TPOT and end to end (a failed
//    request counts as infinitely late) against the SLO's bounds — the window
//    meets the SLO when every bounded p99 does, as `plan` judges a window —
//    and the attainment: the share of its requests that met every bound
//    themselves;
//  - misses attributed to cold starts: a request that missed a bound and
//    arrived while a replica the policy had asked for was still starting
//    (the fleet was short of what the policy wanted because of the cold
//    start);
//  - cost: replica-hours billed (from the decision that asked for a replica
//    until it was gone: cold starts and drains included) times the price.
//
// The trace is read whole (a week of 2.26 M rows: ~300 MB of arrivals),
// once, and shared read-only by every run of a search. Each request's
// figures are kept in 3 floats until the run ends. Threading: one run is
// single-threaded; runs over the same arrivals may go on at once.
#pragma once

#include "engine/sim/fleet/autoscaler.h"
#include "engine/sim/fleet/fleet_plan.h"

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <vector>

namespace bp {

class TraceStore;

// A trace as one run's arrivals, at a rate scale.
struct AutoscaleArrivals {
    std::vector<PlannedArrival> arrivals;
    std::int64_t outputTokens = 0; // asked for
    double spanS = 0;              // the last arrival's offset (serving time)
};
// NotFound for an unknown trace; InvalidArgument for an empty one or a
// rate scale that is not positive.
Result<AutoscaleArrivals> loadAutoscaleArrivals(const TraceStore &store, std::int64_t traceId,
                                                double rateScale, const SimulatorOptions &model);

struct AutoscaleSimRequest {
    TuneSlo slo;
    BatchingConfig config; // each replica's (validated by the caller)
    RouterPolicy router = RouterPolicy::LeastOutstanding;
    int routerQueueLimit = 0;
    double periodS = 15;     // the decision period
    double coldStartS = 180; // asked for -> serving
    double windowS = 300;    // the SLO windows (serving time)
    int initialReplicas = 0; // serving at the start; 0: the policy's minimum
    double replicaCostPerHour = 0;
    // A run stops early (`stopped`) once it has billed more than this many
    // replica-hours (a search's best so far); 0: never.
    double stopAboveReplicaHours = 0;
    // A run stops early (`missedOut`) once more than this many windows have
    // surely missed the SLO (a bound's misses in a window already past
    // what its p99 allows, counted as responses come); 0: never. A search
    // sets it from its required share: an under-provisioned policy, whose
    // queues grow without end, is then cut short instead of simulated to
    // the end.
    std::size_t stopAboveMissedWindows = 0;
    const std::atomic<bool> *cancel = nullptr;
    // Every ~4096 arrivals: how many are in, of all.
    std::function<void(std::size_t done, std::size_t total)> progress;
};

struct AutoscaleWindow {
    double beginS = 0, lengthS = 0;
    std::size_t requests = 0, good = 0, failed = 0;
    std::size_t misses = 0, coldMisses = 0;      // requests that missed a bound; of them, during a cold start
    double ttftP99S = 0, tpotP99S = 0, p99S = 0; // +inf when more than 1% failed
    double meanReplicas = 0;                     // billed, averaged over the window
    bool met = true;
    double attainment() const { return requests ? double(good) / double(requests) : 1.0; }
};

// The fleet at a decision, as the decision saw it, and what it wanted.
struct ReplicaPoint {
    double atS = 0;
    int ready = 0, starting = 0, draining = 0;
    int wanted = 0;
};

struct AutoscaleRun {
    Status status;      // the simulator's refusal (a config EngineCore::create refused)
    std::string policy; // AutoscalePolicy::describe()
    std::vector<ReplicaPoint> timeline;
    std::vector<AutoscaleWindow> windows;
    std::size_t requests = 0, good = 0, misses = 0, coldMisses = 0;
    std::size_t windowsMet = 0, scaleUps = 0, scaleDowns = 0; // replicas asked for, drained or cancelled
    double replicaHours = 0, cost = 0;
    int peakReplicas = 0;
    double spanS = 0; // serving time simulated
    double wallSeconds = 0;
    // Units simulated (batches or steps), and of them the steps taken in
    // decode runs (SimulatorOptions::coalesceDecodeRuns).
    std::size_t steps = 0, coalescedSteps = 0;
    bool cancelled = false, stopped = false; // stopped: past stopAboveReplicaHours
    bool missedOut = false;                  // stopped: past stopAboveMissedWindows
    double windowsMetShare() const
    {
        return windows.empty() ? 1.0 : double(windowsMet) / double(windows.size());
    }
};

// One policy over the arrivals. `model` is simulatorOptionsFor(calibration).
AutoscaleRun simulateAutoscale(const SimulatorOptions &model, std::span<const PlannedArrival> arrivals,
                               const AutoscaleSimRequest &request, const AutoscaleKnobs &knobs);

// The search: the cheapest policy that meets the SLO in at least
// `requiredShare` of the windows, over the knobs an operator sets —
// reactive: the target (a geometric ladder around the start's), the
// scale-down window and the minimum replicas; predictive: the per-replica
// rate and the minimum; scheduled: the lead. For each combination of the
// other knobs the target (or rate) is bisected on its ladder (a higher
// target is cheaper and no better: the verdict is taken as monotone), each
// run stopped as soon as it bills more than the cheapest that met.
// Combinations run on `threads` workers.
struct AutoscaleSearch {
    double requiredShare = 0.99;
    int threads = 2;
    std::function<void(std::size_t runs, const AutoscaleRun &last)> progress; // under a lock
};
struct AutoscaleSearchResult {
    std::optional<AutoscaleKnobs> best; // none met
    AutoscaleRun bestRun;
    std::vector<std::pair<AutoscaleKnobs, AutoscaleRun>> tried; // every run, in the order they ended
    std::size_t runs = 0;
    double wallSeconds = 0;
    bool cancelled = false;
};
AutoscaleSearchResult searchAutoscale(const SimulatorOptions &model, std::span<const PlannedArrival> arrivals,
                                      const AutoscaleSimRequest &request, const AutoscaleKnobs &start,
                                      const AutoscaleSearch &search);

// A run (and the search's tries) as `autoscale --json` prints it and the
// console's Fleet view reads it.
nlohmann::json autoscaleRunJson(const AutoscaleRun &run, bool withTimeline = true);
// A policy's knobs as JSON: {"policy": "reactive", "metric", "target", ...}
// (times in seconds), as `autoscale --json` prints them and a search's tries.
nlohmann::json autoscaleKnobsJson(const AutoscaleKnobs &knobs);

} // namespace bp
