// What a session did, computed from its stored records, and two sessions
// side by side (a recorded session and its replay, or any two). Used by
// `batchpilot replay`, the console's compare view and reports.
//
// Definitions (docs/replay.md):
//  - duration: first arrival to last completion, over all requests;
//  - throughput: completed (status ok) requests / duration;
//  - latency percentiles: total time (arrival -> completion) of completed
//    requests, nearest-rank, exact (not histogram buckets);
//  - rejected: requests that never ran (turned away at submit, expired in
//    the queue, failed on shutdown); failed: ran, but not ok. A remote
//    session's requests are classified by status (remoteRequestRejected):
//    turned away (HTTP 429, 4xx, shed by the client, never sent) is
//    rejected; a timeout (deadline_exceeded), a 5xx or a broken connection
//    is failed;
//  - padding efficiency: sum of real tokens / sum of padded tokens over all
//    batches; mean batch size: requests per batch;
//  - TTFT / TPOT percentiles: completed requests that generated (TTFT) or
//    generated 2+ tokens (TPOT = (last - first) / (n - 1)), nearest-rank;
//  - goodput: completed requests within every set bound of the goodput SLO
//    (the goodput.* knobs of the session's last config, or for a remote
//    session the replay's "goodput_slo"; vLLM / DistServe), per second of
//    duration. With no bound set every completed request is good.
#pragma once

#include "engine/core/batching_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace bp {

struct SessionSummary {
    std::int64_t sessionId = 0;
    std::string kind;
    std::string model;
    std::string device;
    std::string config;               // the last config, e.g. "dynamic max_batch_size=16 max_queue_delay=5ms"
    std::uint64_t configChanges = 0;  // after the initial one
    std::int64_t sourceSessionId = 0; // replays: what they re-drove (0 = none)
    std::int64_t sourceTraceId = 0;

    std::uint64_t requests = 0;
    std::uint64_t completed = 0;
    std::uint64_t rejected = 0;
    std::uint64_t failed = 0;
    std::map<std::string, std::uint64_t> byStatus; // every final status, ok included

    double durationS = 0;
    double throughputRps = 0;
    double outputTokensPerS = 0;
    double latencyMeanMs = 0, latencyP50Ms = 0, latencyP90Ms = 0, latencyP99Ms = 0;
    double queueWaitP50Ms = 0, queueWaitP99Ms = 0;
    double ttftP50Ms = 0, ttftP90Ms = 0, ttftP99Ms = 0;
    double tpotP50Ms = 0, tpotP90Ms = 0, tpotP99Ms = 0;
    // Of the completed requests' prompt tokens, the share served from the KV
    // prefix cache (requests.cached_tokens; 0 without prefix caching).
    double prefixCacheHitRate = 0;

    // The goodput SLO used (0 = bound not set) and what met it.
    double sloTtftMs = 0, sloTpotMs = 0, sloE2eMs = 0;
    std::uint64_t goodCompleted = 0;
    double goodputRps = 0;

    std::uint64_t batches = 0;
    double meanBatchSize = 0;
    double paddingEfficiency = 1;
    std::uint64_t droppedRows = 0;
    // Remote sessions: requests the client shed because its own queue (those
    // waiting for a connection) was full; counted in `rejected` too.
    std::uint64_t clientShed = 0;
};

// A remote request that ended with `status` (its name, as stored) never
// reached the server's batching: queue_full (HTTP 429, or shed by the
// client), invalid_argument / out_of_range / not_found (HTTP 4xx) and
// shutting_down (cancelled before it was sent). Everything else that is not
// ok went out and failed there: deadline_exceeded (timeout), internal /
// unavailable (5xx, reset, refused).
bool remoteRequestRejected(const std::string &status);

nlohmann::json toJson(const SessionSummary &summary);

// One column per session plus the relative change of b against a:
//                        session 3        session 7        change
//   throughput (req/s)   5.38             5.41             +0.6%
std::string formatComparison(const SessionSummary &a, const SessionSummary &b);
// The same table with one column.
std::string formatSummary(const SessionSummary &summary);
// {"a": {...}, "b": {...}, "change": {"throughput_rps": 0.006, ...}}
// (change = b/a - 1; null where a is zero).
nlohmann::json comparisonJson(const SessionSummary &a, const SessionSummary &b);

// The same comparison as rows for a table (the console's compare view): the
// labels, number formatting and change column of formatComparison().
struct ComparisonRow {
    std::string label;  // "throughput (req/s)"
    std::string key;    // "throughput_rps"; also the key in comparisonJson()
    std::string a, b;   // formatted values
    std::string change; // "+0.6%", "0.0%", "n/a" (a is zero), "" (text row or both zero)
    bool numeric = true;
    double relativeChange = 0; // b/a - 1; 0 for text rows and where a is zero
};
std::vector<ComparisonRow> comparisonRows(const SessionSummary &a, const SessionSummary &b);

// A goodput SLO as a remote session keeps it (sessions.replay "goodput_slo":
// {"ttft_us": .., "tpot_us": .., "e2e_us": ..}, 0 = not set): a remote
// session has no config history, so its yardstick is stored there.
nlohmann::json goodputSloJson(const GoodputConfig &slo);
GoodputConfig goodputSloFromJson(const nlohmann::json &j);

// Nearest-rank percentile of sorted values; 0 when empty. q in [0, 1].
double nearestRank(const std::vector<std::int64_t> &sorted, double q);

} // namespace bp
