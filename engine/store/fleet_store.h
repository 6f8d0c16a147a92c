// Fleets in the trace database (docs/schema.md): a simulated
// fleet session's per-replica figures (`replica_figures`), capacity plans
// (`capacity_plans`, `batchpilot plan`: the plan as one JSON document) and
// autoscaler replays (`autoscale_runs`, `batchpilot autoscale --trace`). Reports show a "Fleet" table for a
// session with replica rows and a "Capacity plan" section for a session or trace that has a plan.
//
// Every call opens its own connection to the store's file (the store must
// have been opened, and so migrated, first). Thread-safe.
#pragma once

#include "engine/core/result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bp {

class TraceStore;

struct StoredReplica {
    int replica = 0;
    std::int64_t routed = 0, completed = 0, failed = 0, batches = 0;
    double busyS = 0;
    std::int64_t peakOutstanding = 0, peakKvTokens = 0, preemptions = 0, outputTokens = 0;
};

// Replaces session `sessionId`'s replica rows.
Status saveReplicaFigures(const TraceStore &store, std::int64_t sessionId,
                          const std::vector<StoredReplica> &rows);
// In replica order; empty for a session of one engine.
Result<std::vector<StoredReplica>> replicaFigures(const TraceStore &store, std::int64_t sessionId);
// From the session's first arrival to its last completion, in seconds (an
// aggregate over its requests; 0 without requests): what a replica's busy
// time is a fraction of.
Result<double> sessionSpanS(const TraceStore &store, std::int64_t sessionId);

struct StoredPlan {
    std::int64_t id = 0; // 0 = not stored
    std::int64_t createdAtUs = 0;
    std::optional<std::int64_t> sourceSessionId, sourceTraceId;
    std::int64_t calibrationId = 0; // 0 = a calibration file
    std::string slo;                // "p99 <= 2 s"
    nlohmann::json result;          // the document `plan --json` prints
};
// Stores `p` (createdAtUs 0 = now); returns the new id.
Result<std::int64_t> saveCapacityPlan(const TraceStore &store, const StoredPlan &p);
// The plans made from a session (sessionId) or a trace (traceId), newest first.
Result<std::vector<StoredPlan>> capacityPlansFor(const TraceStore &store,
                                                 std::optional<std::int64_t> sessionId,
                                                 std::optional<std::int64_t> traceId);

// A stored plan's headline, read without its document (the console's Fleet
// view lists these and loads one plan at a time).
struct PlanHeadline {
    std::int64_t id = 0, createdAtUs = 0;
    std::string slo;
    double windowS = 0, rateScale = 1;
    int windows = 0, peakReplicas = 0;
};
// The plans made from a session or a trace, newest first.
Result<std::vector<PlanHeadline>> capacityPlanHeadlines(const TraceStore &store,
                                                        std::optional<std::int64_t> sessionId,
                                                        std::optional<std::int64_t> traceId);
// One plan with its document; NotFound for an unknown id.
Result<StoredPlan> capacityPlan(const TraceStore &store, std::int64_t id);

// An autoscaler replayed over a trace (`autoscale --trace`).
struct StoredAutoscaleRun {
    std::int64_t id = 0; // 0 = not stored
    std::int64_t createdAtUs = 0;
    std::optional<std::int64_t> sourceTraceId; // NULL once the trace was deleted
    std::int64_t calibrationId = 0;            // 0 = a calibration file
    std::string slo;                           // "ttft p99 <= 2 s, tpot p99 <= 200 ms"
    std::string policy;                        // AutoscalePolicy::describe()
    nlohmann::json result;                     // the document `autoscale --trace --json` prints
};
// Stores `r` (createdAtUs 0 = now); returns the new id.
Result<std::int64_t> saveAutoscaleRun(const TraceStore &store, const StoredAutoscaleRun &r);
// A stored run's headline, read without its document.
struct AutoscaleHeadline {
    std::int64_t id = 0, createdAtUs = 0;
    std::string slo, policy;
    double windowsMetShare = 0, replicaHours = 0;
    int peakReplicas = 0;
};
// The runs over a trace, newest first.
Result<std::vector<AutoscaleHeadline>> autoscaleRunHeadlines(const TraceStore &store, std::int64_t traceId);
// One run with its document; NotFound for an unknown id.
Result<StoredAutoscaleRun> autoscaleRun(const TraceStore &store, std::int64_t id);

} // namespace bp
