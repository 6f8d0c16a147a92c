// The snapshot, its latency summaries and a batch record as JSON: what
// GET /v1/metrics/snapshot, the report and the trace store write. Sits above
// config/ (a snapshot carries the config in force, written by config_json.h).
#pragma once

#include "engine/metrics/snapshot.h"

#include <nlohmann/json.hpp>

namespace bp {

nlohmann::json toJson(const LatencySummary &summary);
nlohmann::json toJson(const BatchRecord &batch);
nlohmann::json toJson(const Snapshot &snapshot);

} // namespace bp
