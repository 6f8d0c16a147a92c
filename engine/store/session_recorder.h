// Records one engine's life as a session: the session row, a TraceSink
// attached as an observer, the config history, a metric sample about once
// a second, and the session's end (wall time, dropped rows, logging error).
//
// Lifetime and order (the part that is easy to get wrong):
//   1. SessionRecorder::start(store, engine, ...) after Engine::create and
//      before traffic starts;
//   2. engine.shutdown(Drain) — the drained batches still reach the sink;
//   3. recorder.finish() — last sample, flush, end row. The destructor calls
//      finish() too. The recorder must be finished before the Engine is
//      destroyed (it samples the engine and detaches from it).
// Thread-safe: finish() and sampleNow() may be called from any thread.
#pragma once

#include "metric_sampler.h"
#include "trace_sink.h"
#include "trace_store.h"

#include <memory>
#include <mutex>

namespace bp {

struct RecorderOptions {
    TraceSinkOptions sink;
    // Sampler thread period; zero: no thread, the owner calls sampleNow().
    Duration samplePeriod = std::chrono::seconds(1);
};

class SessionRecorder {
public:
    // Model and device default to the engine's when `info` leaves them
    // empty; host facts to hostFacts() when `info.host` is empty. Fails when
    // the session row or the sink cannot be created (the session row, if
    // any, is then ended with the reason in logging_error).
    static Result<std::unique_ptr<SessionRecorder>> start(std::shared_ptr<TraceStore> store, Engine &engine,
                                                          SessionStart info, RecorderOptions options = {});
    ~SessionRecorder();
    SessionRecorder(const SessionRecorder &) = delete;
    SessionRecorder &operator=(const SessionRecorder &) = delete;

    // Idempotent; see the order above. Returns the end-row update's status.
    Status finish();
    void sampleNow();

    std::int64_t sessionId() const { return m_sessionId; }
    const std::shared_ptr<TraceSink> &sink() const { return m_sink; }
    const std::shared_ptr<TraceStore> &store() const { return m_store; }
    // The sink's warning once logging stopped; empty while it works.
    std::string warning() const { return m_sink->warning(); }
    bool finished() const;

private:
    SessionRecorder(std::shared_ptr<TraceStore> store, Engine &engine, std::int64_t sessionId,
                    std::shared_ptr<TraceSink> sink, Duration samplePeriod);

    std::shared_ptr<TraceStore> m_store;
    Engine &m_engine;
    const std::int64_t m_sessionId;
    std::shared_ptr<TraceSink> m_sink;
    MetricSampler m_sampler;
    const Duration m_samplePeriod;
    mutable std::mutex m_mutex;
    bool m_finished = false; // guarded by m_mutex
    Status m_finishStatus;   // guarded by m_mutex
};

} // namespace bp
