// The recording side of a session driven into a remote target
// (replay_target.h), shared by `batchpilot replay --target` (Replayer::
// runRemote) and the console's Traffic panel aimed at a server:
//
//  start(): the session row (kind "remote", the target's URL, host facts,
//  `start.replay` + "target": describe()), its TraceSink, the target begun
//  on that sink (requests and scraped /metrics samples go there), and a
//  client-side metric_samples row every `samplePeriod` from
//  RemoteTarget::sample().
//  end(): after RemoteTarget::finish() (every completion has run): a last
//  client sample, the sink flushed and stopped, the end row written, and
//  the session's replay JSON stored with the client's figures ("client").
//
// Threading: start() and end() on one thread; the sampler runs its own.
#pragma once

#include "engine/store/metric_sampler.h"
#include "engine/store/session_recorder.h"
#include "engine/store/trace_store.h"
#include "replay_target.h"

#include <memory>

namespace bp {

class RemoteSession {
public:
    // `start.kind`, `device`, `targetUrl` and `host` are filled in here;
    // `start.model` defaults to target.model().name. A failure after the
    // session row exists (the sink, or the target's begin()) ends that row
    // with the error.
    static Result<std::unique_ptr<RemoteSession>> start(std::shared_ptr<TraceStore> store,
                                                        RemoteTarget &target, SessionStart start,
                                                        const RecorderOptions &options);
    ~RemoteSession(); // end({}) unless end() ran
    RemoteSession(const RemoteSession &) = delete;
    RemoteSession &operator=(const RemoteSession &) = delete;

    // Idempotent (the first call's `client` is stored).
    void end(const nlohmann::json &client);

    std::int64_t sessionId() const { return m_id; }
    TimePoint epoch() const { return m_epoch; }
    const std::shared_ptr<TraceSink> &sink() const { return m_sink; }
    // The sink's warning once logging stopped; empty while it works.
    std::string warning() const { return m_sink->warning(); }

private:
    RemoteSession() = default;

    std::shared_ptr<TraceStore> m_store;
    std::int64_t m_id = 0;
    TimePoint m_epoch{};
    nlohmann::json m_replay;
    std::shared_ptr<TraceSink> m_sink;
    std::unique_ptr<MetricSampler> m_sampler;
    bool m_ended = false;
};

} // namespace bp
