// Writes a session's queued records into the database: one transaction per
// call, prepared statements reused across calls. Used by TraceSink's writer
// thread only (it owns the connection).
#pragma once

#include "sqlite_db.h"
#include "store_types.h"

#include "engine/core/records.h"

#include <vector>

namespace bp::store {

// Records waiting for the writer. Batches and their member requests travel
// together: a batch is queued (or dropped) with all its requests.
struct PendingRows {
    std::vector<BatchRecord> batches;
    std::vector<RequestRecord> requests; // batch members and requests that never ran
    std::vector<ConfigChange> configs;
    std::vector<MetricSample> samples;
    std::vector<TargetSample> targetSamples; // remote sessions' scrapes

    std::size_t rows() const
    {
        return batches.size() + requests.size() + configs.size() + samples.size() + targetSamples.size();
    }
    void clear()
    {
        batches.clear();
        requests.clear();
        configs.clear();
        samples.clear();
        targetSamples.clear();
    }
    void swap(PendingRows &other)
    {
        batches.swap(other.batches);
        requests.swap(other.requests);
        configs.swap(other.configs);
        samples.swap(other.samples);
        targetSamples.swap(other.targetSamples);
    }
};

class RowWriter {
public:
    // Opens `dbPath` (which must already be a BatchPilot store: TraceStore
    // creates and migrates it) and prepares the inserts. `maxDatabaseBytes`
    // > 0 caps the file (PRAGMA max_page_count): past it writes fail with
    // SQLITE_FULL, as on a full disk.
    static Result<RowWriter> open(const std::string &dbPath, std::int64_t sessionId, TimePoint epoch,
                                  std::string requestSource, std::int64_t maxDatabaseBytes);

    // Writes everything in `rows` in one transaction; all or nothing.
    Status write(const PendingRows &rows);

private:
    RowWriter() = default;
    std::int64_t offset(TimePoint t) const { return (t - m_epoch).count(); }

    sqlite::Connection m_db;
    std::int64_t m_session = 0;
    TimePoint m_epoch{};
    std::string m_source;
    void bindRequest(sqlite::Statement &st, int base, const RequestRecord &r);

    sqlite::Statement m_request, m_batch, m_config, m_sample, m_targetSample;
    // kRequestChunk request rows per statement: most of a row's cost is the
    // statement's step/reset, not the row (docs/benchmarks-store.md).
    sqlite::Statement m_requestChunk;
};

} // namespace bp::store
