#include "session_recorder.h"

#include "engine/telemetry/host_facts.h"

namespace bp {

Result<std::unique_ptr<SessionRecorder>> SessionRecorder::start(std::shared_ptr<TraceStore> store,
                                                                Engine &engine, SessionStart info,
                                                                RecorderOptions options)
{
    if (!store)
        return Status(StatusCode::InvalidArgument, "session recorder needs a trace store");
    if (info.model.empty())
        info.model = engine.model().name;
    if (info.device.empty())
        info.device = engine.model().device;
    if (info.host.is_null() || info.host.empty())
        info.host = hostFacts();
    const TimePoint epoch = engine.clock().now();
    auto id = store->startSession(info);
    if (!id)
        return id.status();
    auto sink = TraceSink::create(store->path(), *id, epoch, options.sink);
    if (!sink) {
        SessionEnd end;
        end.loggingError = sink.status().message();
        (void)store->endSession(*id, end);
        return sink.status();
    }
    std::unique_ptr<SessionRecorder> rec(
        new SessionRecorder(std::move(store), engine, *id, std::move(sink.value()), options.samplePeriod));
    // The engine stamped its initial config (and any change so far) before
    // the sink was attached: write that history first.
    engine.addObserver(rec->m_sink);
    for (const ConfigChange &change : engine.snapshot().configHistory)
        rec->m_sink->onConfigChanged(change);
    rec->m_sink->start();
    if (rec->m_samplePeriod > Duration::zero())
        rec->m_sampler.start();
    return rec;
}

SessionRecorder::SessionRecorder(std::shared_ptr<TraceStore> store, Engine &engine, std::int64_t sessionId,
                                 std::shared_ptr<TraceSink> sink, Duration samplePeriod)
    : m_store(std::move(store)), m_engine(engine), m_sessionId(sessionId), m_sink(std::move(sink)),
      m_sampler(engine, *m_sink, samplePeriod), m_samplePeriod(samplePeriod)
{
}

SessionRecorder::~SessionRecorder()
{
    (void)finish();
}

bool SessionRecorder::finished() const
{
    std::lock_guard lock(m_mutex);
    return m_finished;
}

void SessionRecorder::sampleNow()
{
    m_sampler.sampleNow();
}

Status SessionRecorder::finish()
{
    std::lock_guard lock(m_mutex);
    if (m_finished)
        return m_finishStatus;
    m_finished = true;
    m_sampler.stop();
    m_sampler.sampleNow(); // the final figures, after the drain
    m_engine.removeObserver(m_sink);
    m_sink->stop(); // writes everything queued
    SessionEnd end;
    end.droppedRows = m_sink->droppedRows();
    end.loggingError = m_sink->warning();
    m_finishStatus = m_store->endSession(m_sessionId, end);
    return m_finishStatus;
}

} // namespace bp
