// Tuning results in the trace database (table `tunings`, docs/schema.md):
// what `batchpilot tune` searched for (its source, SLO, objective,
// calibration), its result as one JSON document (the recommendation with
// its predicted figures and capacity, the Pareto front, and the measured
// figures of the verification replay), and the session that verified it.
// Reports of that session, and of a tuned source session, show a
// "Recommendation" section from it (app/report/report_recommendation.h).
//
// The functions open their own connection to the store's file (as the trace
// sink and the calibrations do); the store must have been opened (and so
// migrated) first. Thread-safe: every call uses its own connection.
#pragma once

#include "engine/core/result.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bp {

class TraceStore;

struct StoredTuning {
    std::int64_t id = 0; // 0 = not stored
    std::int64_t createdAtUs = 0;
    std::optional<std::int64_t> sourceSessionId, sourceTraceId;
    std::optional<std::int64_t> verifySessionId; // the real-clock replay that checked it
    std::int64_t calibrationId = 0;              // 0 = a calibration file
    std::string slo;                             // "p99 <= 200ms"
    std::string objective;                       // "goodput", "throughput"
    nlohmann::json result;                       // the document `tune --json` prints, without its candidates
};

// Stores `t` (its id is ignored; createdAtUs 0 = now) and returns the new id.
Result<std::int64_t> saveTuning(const TraceStore &store, const StoredTuning &t);
// Sets the verification session of tuning `id` and its measured figures
// (result["verification"]).
Status setTuningVerification(const TraceStore &store, std::int64_t id, std::int64_t sessionId,
                             const nlohmann::json &verification);
// Sets result["target"] of tuning `id`: the remote server tuned, its
// current settings and the pick in the server's own syntax.
Status setTuningTarget(const TraceStore &store, std::int64_t id, const nlohmann::json &target);
// The tunings that session `sessionId` verified or was the source of,
// newest first.
Result<std::vector<StoredTuning>> tuningsForSession(const TraceStore &store, std::int64_t sessionId);

} // namespace bp
