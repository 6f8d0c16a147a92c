// The trace store: one SQLite file holding sessions (live and replayed),
// their config history, per-request and per-batch records, metric samples,
// and imported traces. docs/schema.md documents the tables.
//
// Ownership and threading:
//  - TraceStore::open() returns a shared_ptr; every method is thread-safe
//    (one connection guarded by a mutex). Long reads hold the mutex for
//    their duration.
//  - Live records are NOT written through this object: a TraceSink opens its
//    own connection on the same file and writes from its writer thread (WAL
//    lets readers and that writer proceed together).
//  - Opening never modifies a file that is not ours: a foreign SQLite file,
//    a non-SQLite file or a file from a newer BatchPilot is refused with a
//    clear InvalidArgument before anything is written.
#pragma once

#include "store_types.h"

#include "engine/core/result.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace bp {

namespace sqlite {
class Connection;
}

struct SessionSummary;

class TraceStore {
public:
    enum class OpenMode {
        Create,    // create the file (not its directory) when missing
        MustExist, // NotFound when missing: listing commands must not create files
    };

    // Opens `path`, migrating an older schema to the current one.
    // Errors: NotFound (MustExist and no file), InvalidArgument (not ours,
    // newer schema), Unavailable (cannot open or write).
    static Result<std::shared_ptr<TraceStore>> open(const std::string &path,
                                                    OpenMode mode = OpenMode::Create);
    ~TraceStore();
    TraceStore(const TraceStore &) = delete;
    TraceStore &operator=(const TraceStore &) = delete;

    const std::string &path() const { return m_path; }
    int schemaVersion() const;

    // --- sessions ----------------------------------------------------------
    Result<std::int64_t> startSession(const SessionStart &start);
    Status endSession(std::int64_t id, const SessionEnd &end);
    Status setSessionNotes(std::int64_t id, const std::string &notes);
    // Deletes the session and all its records; replays of it keep their rows
    // but lose the link (source_session_id becomes NULL).
    Status deleteSession(std::int64_t id);
    // Newest first, with record counts.
    Result<std::vector<SessionInfo>> sessions() const;
    // NotFound for an unknown id.
    Result<SessionInfo> session(std::int64_t id) const;

    // --- session records (written by TraceSink) -----------------------------
    // In arrival order (ties by request id).
    Result<std::vector<StoredRequest>> requests(std::int64_t sessionId) const;
    // In batch id order.
    Result<std::vector<StoredBatch>> batches(std::int64_t sessionId) const;
    // In version order.
    Result<std::vector<StoredConfigChange>> configHistory(std::int64_t sessionId) const;
    // In time order.
    Result<std::vector<MetricSample>> metricSamples(std::int64_t sessionId) const;
    // A remote session's scrapes of its target's /metrics, in time order.
    Result<std::vector<TargetSample>> targetSamples(std::int64_t sessionId) const;
    // Replaces a session's replay parameters (a remote replay adds its
    // client-side figures when it ends).
    Status setSessionReplay(std::int64_t id, const nlohmann::json &replay);
    // The session's arrivals as a trace (offsets from its first arrival, input
    // tokens, output tokens), every request included whatever its status:
    // what replay re-drives. NotFound for an unknown session.
    Result<std::vector<TraceRow>> sessionArrivals(std::int64_t sessionId) const;
    // Throughput, latency percentiles, padding, batch sizes and rejects of a
    // session, computed from its records (see session_summary.h).
    Result<SessionSummary> summary(std::int64_t sessionId) const;

    // --- traces ------------------------------------------------------------
    // Parses a trace file in any format engine/workload/trace_csv.h reads and stores it as one trace in one
    // transaction. Errors: NotFound (no file), InvalidArgument (bad header,
    // malformed row under RejectFile, no valid rows, cancelled).
    Result<ImportResult> importTrace(const std::string &csvPath, const ImportOptions &options = {});
    // Stores rows already in memory (offsets must be ascending). `hashIds`:
    // empty, or one list of prefix-block ids per row (blockTokens each).
    // Conversations and turns are stored from the rows (TraceRow::conversation).
    Result<TraceInfo> addTrace(const std::string &name, const std::string &sourcePath, TraceFormat format,
                               const std::vector<TraceRow> &rows, std::uint64_t skippedRows = 0,
                               const std::vector<PrefixBlocks> &hashIds = {},
                               int blockTokens = kPrefixBlockTokens);
    // Newest first.
    Result<std::vector<TraceInfo>> traces() const;
    Result<TraceInfo> trace(std::int64_t id) const;
    Result<std::vector<TraceRow>> traceRows(std::int64_t id) const;
    // The rows' prefix-block hash ids, in row order: empty when the trace has
    // none (TraceInfo::blockTokens == 0). NotFound for an unknown id.
    Result<std::vector<PrefixBlocks>> traceHashIds(std::int64_t id) const;
    Status deleteTrace(std::int64_t id);
    // Streaming a long trace window by window (the capacity planner): the
    // index of the first row of each window `window` long (offsets from the
    // first arrival; windows [k·window, (k+1)·window)), with row_count last
    // — one pass over the arrival column, nothing else kept.
    Result<std::vector<std::int64_t>> traceWindowStarts(std::int64_t id, Duration window) const;
    // Rows [begin, end) by index, with their hash ids when the trace has
    // them (`hashIds` empty otherwise).
    Status traceSlice(std::int64_t id, std::int64_t begin, std::int64_t end, std::vector<TraceRow> &rows,
                      std::vector<PrefixBlocks> &hashIds) const;

private:
    explicit TraceStore(std::string path);

    const std::string m_path;
    mutable std::mutex m_mutex;
    std::unique_ptr<sqlite::Connection> m_db; // guarded by m_mutex
};

} // namespace bp
