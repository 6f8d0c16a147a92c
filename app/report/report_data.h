// Everything a session report shows, loaded once from the trace store as a
// plain value: the renderers (JSON, HTML, PDF) only format it, so the three
// formats always agree, and every figure comes from the store's own API.
//
// Where the figures come from:
//  - the headline (requests, throughput, latency percentiles, queue wait
//    p50/p99, padding efficiency, mean batch size, rejects, dropped rows) is
//    TraceStore::summary() unchanged: the report says what `batchpilot
//    replay` and the console's compare view say;
//  - generation (when the session generated tokens): TPOT percentiles and
//    goodput with the SLO it was judged against are summary()'s;
//  - the figures summary() does not have (queue wait p90, compute and time
//    to first token percentiles, timeouts) are computed here with the
//    store's own definitions: completed (status ok) requests, nearest-rank
//    percentiles (bp::nearestRank). The request and batch rows are read one
//    at a time on a connection of the report's own: a session of millions
//    of rows costs a few integers per completed request,
//    never its records;
//  - the time series are the session's metric samples, the markers its
//    config history;
//  - for a replay of a recorded session, the source's summary and the
//    comparison rows (comparisonRows / comparisonJson) of (source, replay).
#pragma once

#include "engine/core/result.h"
#include "engine/store/fleet_store.h"
#include "engine/store/session_summary.h"
#include "engine/store/store_types.h"
#include "engine/store/tuning_store.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace bp {
class TraceStore;
}

namespace bp::report {

// Percentiles in milliseconds over `count` values (all zero when count is 0).
struct Percentiles {
    std::uint64_t count = 0;
    double p50Ms = 0, p90Ms = 0, p99Ms = 0;
};

// Figures of completed requests that TraceStore::summary() does not carry.
struct ExtraFigures {
    double queueWaitP90Ms = 0;
    Percentiles compute;               // the batch's compute time, per completed request
    std::optional<Percentiles> ttft;   // time to first token; only when something was generated
    std::uint64_t timeouts = 0;        // deadline_exceeded (expired in the queue or past the deadline)
    std::uint64_t generatedTokens = 0; // output tokens of completed requests
    std::uint64_t tpotRequests = 0;    // completed requests with 2+ tokens: those TPOT is over
};

// The model's facts a live session records with its host facts
// (app/engine_host.cpp: host["model"]); each unset where not recorded (a
// replay, a session recorded before they were).
struct ModelFacts {
    std::optional<std::string> architecture;     // "Qwen2ForCausalLM"
    std::optional<std::string> dtype;            // "bfloat16"
    std::optional<std::int64_t> kvBytesPerToken; // 0: no KV cache
    std::optional<std::int64_t> parameters;
};
ModelFacts modelFacts(const SessionInfo &session);

struct ReportData {
    SessionInfo session;
    SessionSummary summary;
    ExtraFigures extra;
    std::vector<StoredConfigChange> configHistory;
    std::vector<MetricSample> samples;
    // Largest batch dispatched in each sample interval (index-aligned with
    // `samples`; 0 where none ran), from the session's batch records.
    std::vector<int> maxBatchSize;
    // First arrival and last completion as offsets from the session start.
    double firstArrivalS = 0, lastCompletionS = 0;

    // A replay of a recorded session that still exists: its summary.
    std::optional<SessionSummary> sourceSummary;
    // A replay of an imported trace that still exists.
    std::optional<TraceInfo> sourceTrace;
    // `batchpilot tune` results this session verified or was the source of
    // (report_recommendation.h), newest first.
    std::vector<StoredTuning> tunings;
    // A simulated fleet's replicas, and the capacity plans made from this
    // session or the trace it replays (report_fleet.h).
    std::vector<StoredReplica> replicas;
    std::vector<StoredPlan> plans;

    std::int64_t generatedAtUs = 0; // wall clock when the report was built
};

// Loads session `sessionId`. NotFound (with a message naming the id) for an
// unknown session; other store errors as they come. Thread-safe (the store
// is); takes as long as reading the session's records.
Result<ReportData> loadReportData(const TraceStore &store, std::int64_t sessionId);

// ExtraFigures from a session's requests, given one at a time (the report
// streams them from the store; tests can feed records).
class ExtraFiguresBuilder {
public:
    void add(StatusCode status, Duration queueWait, Duration compute, Duration ttft, int outputTokens);
    ExtraFigures finish() &&;

private:
    ExtraFigures m_f;
    std::vector<std::int64_t> m_wait, m_compute, m_ttft; // completed requests only
};

} // namespace bp::report
