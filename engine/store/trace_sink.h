// TraceSink: the engine observer that logs a session's records into the
// trace store without ever slowing serving down.
//
// Threading contract:
//  - The EngineObserver callbacks (and recordSample) run on engine threads.
//    They only append to a bounded in-memory queue under a short mutex and
//    return; they never touch SQLite, never wait for the writer and never
//    allocate once the queue's buffers have grown. When the queue is full
//    the record is dropped and counted (a batch is dropped together with
//    all its requests, so the database never holds half a batch). Config
//    changes are the exception: they are never dropped for a full queue
//    (they are rare, and replays and reports depend on the history), so
//    they queue past the capacity.
//  - One writer thread (started by start()) drains the queue: every
//    `flushInterval`, or sooner when `wakeRows` rows are waiting, it writes
//    everything queued in ONE transaction through prepared statements on its
//    own connection. Its thread runs at the lowest CPU priority (nice 19 on
//    Linux) so that under CPU contention the engine's threads win and the
//    queue, not the requests, absorbs the delay.
//  - A write that fails (disk or `maxDatabaseBytes` full, read-only file,
//    I/O error, ...) turns logging off for the rest of the session: the
//    failed transaction is rolled back, its rows and every later one are
//    counted as dropped, warning() explains what happened (also printed once
//    to stderr), and serving carries on untouched.
//  - A process killed at any moment leaves every committed transaction in
//    the database (WAL) and loses at most the transaction in flight plus
//    what was still queued.
//
// Lifetime: shared_ptr (the engine holds observers by shared_ptr). stop()
// or the destructor drains the queue and joins the writer; records that
// arrive after stop() are dropped and counted.
#pragma once

#include "store_types.h"

#include "engine/core/records.h"
#include "engine/core/result.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace bp {

namespace store {
struct PendingRows;
class RowWriter;
} // namespace store

struct TraceSinkOptions {
    // Rows (requests + batches + config changes + samples) the queue holds
    // before it drops. At 200k rows/s this is more than a second of backlog.
    std::size_t queueCapacity = std::size_t(1) << 18;
    // The writer starts a transaction early once this many rows wait.
    std::size_t wakeRows = 16384;
    // ... and at the latest this long after the previous one.
    Duration flushInterval = std::chrono::milliseconds(100);
    // Stored in requests.source: "live", "replay", ...
    std::string requestSource = "live";
    // > 0: writes fail as on a full disk once the file would pass this size.
    std::int64_t maxDatabaseBytes = 0;
    // CPU priority of the writer thread (Linux):
    //   Nice  nice 19: under contention the engine's threads get ~98% of a
    //         shared core, the writer the rest (default);
    //   Idle  SCHED_IDLE: the writer runs only on otherwise idle CPU time —
    //         serving never competes with it, but on a machine that is busy
    //         with anything else it may drop most rows;
    //   Normal  the priority of the thread that called start().
    // Either way rows that cannot be written in time are dropped and
    // counted, never waited for.
    enum class WriterPriority { Nice, Idle, Normal };
    WriterPriority writerPriority = WriterPriority::Nice;
    // Called on the writer thread after each committed transaction with the
    // total rows committed so far (tests, benchmarks). Must not block long.
    std::function<void(std::uint64_t committedRows)> onCommit;
};

struct TraceSinkStats {
    std::uint64_t writtenRows = 0;  // committed
    std::uint64_t droppedRows = 0;  // will never be written: queue full, logging off, or after stop()
    std::uint64_t transactions = 0; // committed
    double writerCpuSeconds = 0;    // CPU time the writer thread used (Linux), for cost per row
    bool active = true;             // false once logging stopped because of an error
    std::string warning;            // why logging stopped; empty while active
};

class TraceSink final : public EngineObserver {
public:
    // Opens a writer connection to `dbPath` (a store created by TraceStore)
    // for session `sessionId`; times are stored as offsets from `epoch` (the
    // engine clock's reading when the session started). The writer thread
    // does not run until start(): until then records queue up (and drop
    // past the capacity).
    static Result<std::shared_ptr<TraceSink>> create(const std::string &dbPath, std::int64_t sessionId,
                                                     TimePoint epoch, TraceSinkOptions options = {});
    ~TraceSink() override;
    TraceSink(const TraceSink &) = delete;
    TraceSink &operator=(const TraceSink &) = delete;

    void start();
    // Writes what is queued, then stops the writer. Idempotent; thread-safe.
    void stop();
    // Blocks until every record queued before the call is committed (or
    // logging has stopped). Returns false when the writer is not running.
    bool flush();

    // EngineObserver: engine threads, never block.
    void onBatchCompleted(const BatchRecord &batch, std::span<const RequestRecord> requests) override;
    void onRequestFailed(const RequestRecord &request) override;
    // Stored as a request row with batch_id 0 and status ok.
    void onRequestServedFromCache(const RequestRecord &request) override;
    void onConfigChanged(const ConfigChange &change) override;
    // The metric sampler's rows travel through the same queue.
    void recordSample(const MetricSample &sample);
    // A request that did not come through an engine (a remote replay's
    // answers): stored as it is, batch_id included (0: no batch known).
    // Any thread, never blocks, like the observer callbacks.
    void recordRequest(const RequestRecord &request);
    // A remote target's scraped /metrics series (target_samples).
    void recordTargetSample(const TargetSample &sample);

    std::int64_t sessionId() const { return m_sessionId; }
    TimePoint epoch() const { return m_epoch; }
    std::uint64_t droppedRows() const { return m_dropped.load(std::memory_order_relaxed); }
    std::uint64_t writtenRows() const { return m_written.load(std::memory_order_relaxed); }
    bool loggingActive() const { return !m_failed.load(std::memory_order_relaxed); }
    std::string warning() const;
    TraceSinkStats stats() const;

private:
    TraceSink(std::int64_t sessionId, TimePoint epoch, TraceSinkOptions options);
    // Reserves room for `rows` rows; false (and counted as dropped) when full
    // or not accepting. Requires m_mutex.
    bool admit(std::size_t rows);
    void pushRequest(const RequestRecord &request);
    void writerLoop();
    void disable(const Status &why, std::uint64_t lostRows);

    const std::int64_t m_sessionId;
    const TimePoint m_epoch;
    const TraceSinkOptions m_options;
    std::unique_ptr<store::RowWriter> m_writer; // writer thread only (after start)

    std::atomic<bool> m_accepting{true}; // false after stop() or a failure
    std::atomic<bool> m_failed{false};
    std::atomic<std::uint64_t> m_dropped{0}, m_written{0}, m_transactions{0};
    std::atomic<std::int64_t> m_writerCpuNs{0};

    mutable std::mutex m_mutex;
    std::condition_variable m_writerCv; // writer waits here
    std::condition_variable m_flushCv;  // flush() waits here
    // guarded by m_mutex:
    std::unique_ptr<store::PendingRows> m_pending;
    bool m_writerWaiting = false;
    bool m_running = false;
    bool m_stopping = false;
    std::uint64_t m_flushRequested = 0;
    std::uint64_t m_flushServed = 0;
    std::string m_warning;

    std::mutex m_lifecycle; // serializes start()/stop()
    std::thread m_thread;
};

} // namespace bp
