// Value types of the trace store: what goes into the database and what comes
// back out. Plain values, safe to copy between threads. Units follow the
// schema (docs/schema.md): wall-clock times are microseconds since the Unix
// epoch; engine times are Durations from the session's start.
#pragma once

#include "engine/core/batching_config.h"
#include "engine/core/records.h"
#include "engine/telemetry/target_sample.h"
#include "engine/workload/prefix_tokens.h"
#include "engine/workload/trace_csv.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace bp {

// Microseconds since the Unix epoch, from the system clock.
std::int64_t wallClockMicros();

// What a new session row starts with.
struct SessionStart {
    std::string kind = "live"; // "live", "replay", or a tool's name ("bench")
    std::string model;
    std::string device;
    nlohmann::json host = nlohmann::json::object(); // hostFacts()
    std::string notes;
    std::optional<std::int64_t> sourceSessionId; // replays: the recorded session re-driven
    std::optional<std::int64_t> sourceTraceId;   // replays: the imported trace re-driven
    nlohmann::json replay;                       // replays: their parameters; null otherwise
    std::int64_t startedAtUs = 0;                // 0 = now
    std::string targetUrl; // kind "remote": the server the requests went to; empty otherwise
};

struct SessionEnd {
    std::int64_t endedAtUs = 0; // 0 = now
    std::uint64_t droppedRows = 0;
    std::string loggingError; // why logging stopped early, empty when it did not
};

// A session row, with counts of its records.
struct SessionInfo {
    std::int64_t id = 0;
    std::string kind;
    std::int64_t startedAtUs = 0;
    std::optional<std::int64_t> endedAtUs; // nullopt: still running, or the process died
    std::string model;
    std::string device;
    nlohmann::json host;
    std::string notes;
    std::optional<std::int64_t> sourceSessionId;
    std::optional<std::int64_t> sourceTraceId;
    nlohmann::json replay;
    std::uint64_t droppedRows = 0;
    std::string loggingError;
    std::string targetUrl; // remote sessions (schema 3); empty for the others
    std::uint64_t requestCount = 0;
    std::uint64_t batchCount = 0;
};

// One request as stored. Times are offsets from the session's start.
struct StoredRequest {
    std::uint64_t requestId = 0;
    Duration arrival{};
    Duration queueWait{};
    Duration compute{};
    Duration total{};
    Duration timeToFirstToken{};
    Duration timePerOutputToken{}; // schema 6; zero below two tokens and in older rows
    Duration interTokenP50{};      // median inter-token gap (schema 6)
    Duration interTokenMax{};      // largest inter-token gap (schema 6)
    int inputTokens = 0;
    int cachedTokens = 0; // of inputTokens, served from the KV prefix cache (schema 9)
    int outputTokens = 0;
    int bucket = 0;
    std::uint64_t batchId = 0;
    StatusCode status = StatusCode::Ok;
    std::string source;            // "live", "replay", ... (TraceSinkOptions::requestSource)
    std::int64_t conversation = 0; // multi-turn (schema 10); 0 = none
    int turn = 0;
    // Answered from the response cache: completed without running in a batch
    // (a remote request has no batch we can see, and is never a cache hit).
    bool cacheHit() const { return status == StatusCode::Ok && batchId == 0 && source != "remote"; }
};

struct StoredBatch {
    std::uint64_t batchId = 0;
    Duration dispatched{};
    Duration intended{};
    int size = 0;
    int paddedLength = 0;
    std::int64_t realTokens = 0;
    std::int64_t paddedTokens = 0;
    Duration compute{};
    DispatchReason reason = DispatchReason::Single;
    PolicyKind policy = PolicyKind::None;
    int bucket = 0;
    int executor = 0;
    std::uint64_t configVersion = 0;
    StatusCode status = StatusCode::Ok;
    // Policy continuous, one row per step (schema 6; zero otherwise).
    int prefillTokens = 0, decodeTokens = 0, joined = 0;
    int running = 0, waiting = 0; // after the step
    std::int64_t kvTokens = 0;    // after the step
    int preempted = 0;
};

struct StoredConfigChange {
    std::uint64_t version = 0;
    Duration at{};
    std::string origin;
    std::string summary;
    BatchingConfig config;
};

// About once a second while a session records: the engine's window figures.
struct MetricSample {
    Duration at{}; // offset from the session's start
    double requestsPerS = 0;
    double inputTokensPerS = 0;
    double outputTokensPerS = 0;
    double totalP50Us = 0, totalP90Us = 0, totalP99Us = 0;
    double queueWaitP99Us = 0;
    std::uint64_t queueDepth = 0;
    int inFlight = 0;
    double meanBatchSize = 0;
    double paddingEfficiency = 1;
    double busyFraction = 0;
    std::uint64_t submitted = 0; // cumulative
    std::uint64_t completed = 0; // cumulative, status ok
    std::uint64_t failed = 0;    // cumulative, every other final status
    std::uint64_t configVersion = 0;
    std::uint64_t droppedRows = 0; // logger rows dropped so far (TraceSink::droppedRows)

    bool operator==(const MetricSample &) const = default;
};

struct TraceInfo {
    std::int64_t id = 0;
    std::string name;
    std::string sourcePath;
    TraceFormat format = TraceFormat::Plain;
    std::int64_t importedAtUs = 0;
    std::uint64_t rows = 0;
    std::uint64_t skippedRows = 0;
    double durationS = 0; // last arrival offset
    // Tokens per prefix-block hash id (512 for Mooncake; ImportOptions::blockTokens) when the rows carry
    // hash ids (TraceStore::traceHashIds), else 0.
    int blockTokens = 0;
};

struct ImportOptions {
    BadRowPolicy badRows = BadRowPolicy::SkipBadRows;
    std::string name; // default: the file name without directory and extension
    // Called now and then with the fraction done (parse, then insert);
    // return false to cancel. Nothing is stored when cancelled.
    std::function<bool(double fraction)> progress;
    // The file's format; detected from its content when unset.
    std::optional<TraceFormat> format;
    // BurstGPT: drop failed requests (0 response tokens) instead of keeping
    // them as prefill-only arrivals (TraceParseOptions::skipFailed).
    bool skipFailed = false;
    // Repeat the file's rows (and hash ids) back to back until the trace
    // spans at least this long (0: as they are): a week of one hour's
    // shape, for planning. Each copy starts one mean gap after
    // the previous copy's last arrival.
    Duration repeatTo{};
    // Tokens per hash id (TraceParseOptions::blockTokens), stored with the trace.
    int blockTokens = kPrefixBlockTokens;
};

struct ImportResult {
    TraceInfo trace;
    std::vector<TraceParseError> errors; // skipped rows (at most 100 kept), with line numbers
    std::uint64_t failedRows = 0;        // BurstGPT: failed requests, kept or (skipFailed) dropped
    PrefixReuse prefix;                  // of the stored hash ids (all zero without them)
    PrefixShare share;                   // reusable prompt tokens (hash ids and conversations)
};

std::optional<StatusCode> parseStatusCode(std::string_view name);
std::optional<DispatchReason> parseDispatchReason(std::string_view name);

} // namespace bp
