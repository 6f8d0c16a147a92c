// The trace store's schema and its migrations. docs/schema.md describes
// every table and column; keep the two in step.
//
// Versioning: `PRAGMA user_version` holds the schema version, `PRAGMA
// application_id` marks the file as BatchPilot's. Migrations are applied in
// order, each in its own transaction together with its version bump, so a
// file is always at exactly one version. Version history:
//   1  sessions, config_changes, requests, batches, metric_samples, traces,
//      trace_requests
//   2  replay lineage and logging health: sessions.source_session_id,
//      source_trace_id, replay, dropped_rows, logging_error;
//      requests.source; metric_samples.dropped_rows
//   3  remote targets: sessions.target_url; target_samples (the target's
//      scraped /metrics series)
//   5  calibrations (cost models for simulated replay)
//   6  token-level timing: requests.tpot_ns, itl_p50_ns, itl_max_ns;
//      batches.prefill_tokens, decode_tokens, joined, running, waiting,
//      kv_tokens, preempted (one row per step under policy continuous)
//   7  tunings (batchpilot tune's results and their verification sessions)
//   8  calibrations.target_url, server (remote servers calibrated from outside)
//   9  requests.cached_tokens (prompt tokens served from the KV prefix cache)
//  10  multi-turn: trace_requests.conversation_id, turn, think_time_ns;
//      requests.conversation_id, turn; target_samples.prefix_cache_hit_rate
//  11 fleets: requests.replica, router_wait_ns; batches.replica;
//      replica_figures (a simulated fleet's replicas); capacity_plans
#pragma once

#include "sqlite_db.h"

#include <cstdint>

namespace bp::store {

constexpr int kSchemaVersion = 13;
// 'BPTS' (BatchPilot trace store)
constexpr std::int64_t kApplicationId = 0x42505453;

// What a file on disk is, judged without changing it.
struct FileIdentity {
    std::int64_t applicationId = 0;
    int userVersion = 0;
    std::int64_t objects = 0; // rows in sqlite_schema
};
// NotADatabase-style failures come back as InvalidArgument with a message
// naming the file.
Result<FileIdentity> identify(sqlite::Connection &db);

// Brings a connection's database from its current version up to `target`
// (<= kSchemaVersion), one migration per transaction. A brand-new file gets
// the application id with the first migration. Tests use a lower `target`
// to build files of an older version.
Status migrate(sqlite::Connection &db, int target = kSchemaVersion);

// Connection settings every BatchPilot connection uses: WAL, synchronous =
// NORMAL (a committed transaction survives a process crash; only an OS crash
// or power loss may lose the last ones), foreign keys on.
Status configureConnection(sqlite::Connection &db);

// A read-write connection to an existing trace database, configured as
// above: what the stores kept beside TraceStore (calibrations, tunings)
// open for each call.
Result<sqlite::Connection> openConnection(const std::string &path);

} // namespace bp::store
