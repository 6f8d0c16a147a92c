#include "remote_session.h"

#include "engine/store/fleet_store.h"
#include "engine/telemetry/host_facts.h"

namespace bp {

Result<std::unique_ptr<RemoteSession>> RemoteSession::start(std::shared_ptr<TraceStore> store,
                                                            RemoteTarget &target, SessionStart start,
                                                            const RecorderOptions &options)
{
    if (!store)
        return Status(StatusCode::InvalidArgument, "a remote session needs a trace store");
    start.kind = "remote";
    if (start.model.empty())
        start.model = target.model().name;
    start.device = "remote";
    start.host = hostFacts();
    start.targetUrl = target.url();
    if (!start.replay.is_object())
        start.replay = nlohmann::json::object();
    start.replay["target"] = target.describe();
    auto id = store->startSession(start);
    if (!id)
        return id.status();
    std::unique_ptr<RemoteSession> s(new RemoteSession);
    s->m_store = std::move(store);
    s->m_id = *id;
    s->m_replay = start.replay;
    s->m_epoch = SteadyClock::now();
    auto fail = [&](const Status &why) {
        SessionEnd end;
        end.loggingError = why.message();
        (void)s->m_store->endSession(s->m_id, end);
        s->m_ended = true;
        return why;
    };
    TraceSinkOptions so = options.sink;
    so.requestSource = "remote";
    auto sink = TraceSink::create(s->m_store->path(), s->m_id, s->m_epoch, so);
    if (!sink)
        return fail(sink.status());
    s->m_sink = std::move(sink.value());
    s->m_sink->start();
    if (Status begun = target.begin(s->m_sink, s->m_epoch); !begun) {
        s->m_sink->stop();
        return fail(begun);
    }
    const TimePoint epoch = s->m_epoch;
    TraceSink *raw = s->m_sink.get();
    s->m_sampler = std::make_unique<MetricSampler>(
        [&target, epoch, raw] { return target.sample(epoch, raw->droppedRows()); }, *s->m_sink,
        options.samplePeriod > Duration::zero() ? options.samplePeriod : std::chrono::seconds(1));
    s->m_sampler->start();
    return s;
}

RemoteSession::~RemoteSession()
{
    end({});
}

void RemoteSession::end(const nlohmann::json &client)
{
    if (m_ended)
        return;
    m_ended = true;
    m_sampler->stop();
    m_sampler->sampleNow();
    m_sink->stop();
    SessionEnd e;
    e.droppedRows = m_sink->droppedRows();
    e.loggingError = m_sink->warning();
    (void)m_store->endSession(m_id, e);
    if (!client.is_null()) {
        nlohmann::json replay = m_replay;
        replay["client"] = client;
        // A fleet of URLs (its client-side router's figures): the session's
        // "fleet" and its replica_figures rows, as a simulated fleet has.
        if (const auto fleet = client.find("fleet"); fleet != client.end() && fleet->is_object()) {
            replay["fleet"] = *fleet;
            std::vector<StoredReplica> rows;
            for (const nlohmann::json &r : fleet->value("replica_figures", nlohmann::json::array())) {
                StoredReplica row;
                row.replica = r.value("replica", 0);
                row.routed = r.value("routed", std::int64_t(0));
                row.completed = r.value("completed", std::int64_t(0));
                row.failed = r.value("failed", std::int64_t(0));
                row.peakOutstanding = r.value("peak_outstanding", std::int64_t(0));
                row.peakKvTokens = r.value("peak_kv_tokens", std::int64_t(0));
                row.outputTokens = r.value("output_tokens", std::int64_t(0));
                rows.push_back(row);
            }
            (void)saveReplicaFigures(*m_store, m_id, rows);
        }
        (void)m_store->setSessionReplay(m_id, replay);
    }
}

} // namespace bp
