// The remote target over HTTP (engine/store/replay_target.h): a replay's
// requests go to another server — Triton, KServe, vLLM, TGI, SGLang or
// another BatchPilot — instead of the embedded engine.
//
//  - Open loop: submit() never waits. A request goes out at once on an
//    idle keep-alive connection, or on a new one while fewer than
//    `maxConcurrency` are open; otherwise it waits in the client's own
//    FIFO (its queue_wait) and keeps its scheduled arrival, so a slow
//    server shows up as latency, never as fewer requests sent.
//  - Every request is recorded like a local one (TraceSink::recordRequest):
//    queue_wait = waiting for a connection, compute = on the wire
//    (request written -> answer complete), total = scheduled arrival ->
//    answer complete, TTFT = scheduled arrival -> first token event
//    (openai) or first response byte (oip). HTTP errors, resets and
//    timeouts are per-request statuses (remote_codec.h: statusForHttp);
//    none of them ends the replay.
//  - /metrics of the target is scraped every `scrapeInterval` on a
//    connection of its own (outside the cap), parsed strictly
//    (engine/store/prometheus_text.h), mapped to one set of series
//    (engine/store/target_metrics.h) and stored in target_samples; a
//    failed scrape is stored as a row with its error.
//
// Threading: the HTTP work runs on a QThread of its own with its own event
// loop (the caller's thread blocks in Replayer::runRemote and may have no
// event loop at all). submit(), sample() and finish() are thread-safe.
#pragma once

#include "remote_codec.h"

#include "engine/result.h"
#include "engine/store/replay_target.h"

#include <QString>
#include <QThread>
#include <QUrl>

#include <memory>

namespace bp::remote {

struct RemoteOptions {
    QUrl target; // http[s]://host[:port][/prefix]; routes are appended to the prefix
    Protocol protocol = Protocol::Oip;
    QString model;                                     // the model's name on the server
    QString token;                                     // sent as "Authorization: Bearer T" when set
    int maxConcurrency = 64;                           // connections (and so requests on the wire) at most
    Duration timeout = std::chrono::seconds(60);       // per request, connection wait excluded
    Duration scrapeInterval = std::chrono::seconds(1); // zero: no scraping
    QUrl metricsUrl;                                   // default: the target's origin + /metrics
    // What the replay generates inputs for (the remote model's facts are
    // not discoverable the same way on every server, so they are given).
    int vocabSize = 256;
    int maxInputTokens = 4096;
    bool generative = true;
    int maxNewTokens = 0; // cap on a request's generated tokens (0 = the trace's)
};

// InvalidArgument naming the problem: scheme, host, concurrency, ...
Status validate(const RemoteOptions &options);

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
    nlohmann::json finish(bool cancel) override;

    class Worker; // the QObject on the HTTP thread (http_remote_target.cpp)

private:
    explicit HttpRemoteTarget(RemoteOptions options);

    const RemoteOptions m_options;
    ModelInfo m_model;
    QThread m_thread;
    Worker *m_worker = nullptr; // lives on m_thread; deleted there
};

} // namespace bp::remote
