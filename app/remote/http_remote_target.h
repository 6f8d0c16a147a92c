// The remote target over HTTP (engine/replay/replay_target.h): a replay's
// requests go to another server — Triton, KServe, vLLM, TGI, SGLang or
// another BatchPilot — instead of the embedded engine.
//
//  - Open loop: submit() never waits. A request goes out at once on an
//    idle keep-alive connection, or on a new one while fewer than
//    `maxConcurrency` are open; otherwise it waits in the client's own
//    FIFO (its queue_wait) and keeps its scheduled arrival, so a slow
//    server shows up as latency, never as fewer requests sent.
//  - That FIFO holds at most `maxQueued` requests: beyond it a request is
//    shed at once (status queue_full, stored like any other, counted as
//    "client_shed"), so that offering far more than the server serves
//    cannot grow the client's memory without bound.
//  - Every request is recorded like a local one (TraceSink::recordRequest;
//    remote_answer.h): queue_wait, compute = on the wire, total, TTFT, and
//    for a streamed answer TPOT and the inter-token gaps. HTTP errors,
//    resets and timeouts are per-request statuses; none of them ends the
//    replay.
//  - A fleet (RemoteOptions::replicas, `--target URL1,URL2`): each request
//    goes to the URL the client-side router picks (client_router.h, the
//    simulator's Router on the client's own in-flight counts); each URL
//    has its own connections and FIFO under the same caps, and the stored
//    row names its replica.
//  - /metrics of the target is scraped every `scrapeInterval`
//    (remote_scraper.h) into target_samples, and what it publishes of the
//    server's own settings is kept for the session's `config` row.
//
// Threading: the HTTP work runs on a QThread of its own with its own event
// loop (the caller's thread blocks in Replayer::runRemote and may have no
// event loop at all). submit(), sample() and finish() are thread-safe.
#pragma once

#include "remote_codec.h"
#include "remote_options.h"

#include "engine/core/result.h"
#include "engine/replay/replay_target.h"

#include <QString>
#include <QThread>
#include <QUrl>

#include <memory>

namespace bp::remote {

class HttpRemoteTarget final : public RemoteTarget {
public:
    static Result<std::unique_ptr<HttpRemoteTarget>> create(RemoteOptions options);
    ~HttpRemoteTarget() override;

    std::string url() const override;
    nlohmann::json describe() const override;
    const ModelInfo &model() const override { return m_model; }
    Status begin(std::shared_ptr<TraceSink> sink, TimePoint epoch) override;
    Status submit(Request request, Completion done) override;
    MetricSample sample(TimePoint epoch, std::uint64_t droppedRows) const override;
    std::uint64_t shed() const override;
    nlohmann::json finish(bool cancel) override;
    void failPending(bool onTheWire) override;

    class Worker; // the QObject on the HTTP thread (http_remote_target.cpp)

private:
    explicit HttpRemoteTarget(RemoteOptions options);

    const RemoteOptions m_options;
    ModelInfo m_model;
    QThread m_thread;
    Worker *m_worker = nullptr; // lives on m_thread; deleted there
};

} // namespace bp::remote
