// The seam between a replay and what it drives. The Replayer paces the
// source's arrivals (open loop, each request stamped with its *scheduled*
// arrival) and hands each request to a target:
//  - the embedded Engine (Replayer::run): a fresh engine under the chosen
//    batching config, real or virtual clock;
//  - a RemoteTarget (Replayer::runRemote): a server somewhere else, spoken
//    to over HTTP (KServe v2 / OIP `infer`, or OpenAI `/v1/completions`
//    streaming). The implementation lives in app/remote (Qt Network); the
//    engine stays Qt-free and sees only this interface.
#pragma once

#include "engine/store/store_types.h"
#include "engine/store/trace_sink.h"

#include "engine/core/request.h"
#include "engine/model/backend.h"

#include <memory>
#include <nlohmann/json.hpp>

namespace bp {

class RemoteTarget {
public:
    virtual ~RemoteTarget() = default;

    // sessions.target_url, and the parameters stored in sessions.replay
    // ("target": {...}).
    virtual std::string url() const = 0;
    virtual nlohmann::json describe() const = 0;
    // What the replay generates inputs for: vocabulary size, longest input,
    // whether to ask for generated tokens (generative) and how many at most.
    virtual const ModelInfo &model() const = 0;

    // Once, before the first submit: every request's record goes to `sink`
    // (through TraceSink::recordRequest, times as offsets from `epoch`),
    // and scraping of the target's /metrics (when configured) starts, its
    // samples going to the same sink. A failure here (e.g. the target
    // cannot be reached at all) ends the replay before it starts.
    virtual Status begin(std::shared_ptr<TraceSink> sink, TimePoint epoch) = 0;

    // Any thread; never blocks (open loop). The request goes out at once,
    // or as soon as a connection is free under the concurrency cap (the
    // time it waits for one is its queue_wait). Returns non-OK only after
    // finish(); otherwise `done` is called exactly once, on the target's
    // own thread, with the request's status (HTTP errors and timeouts are
    // statuses, never exceptions) and timing (queue_wait, compute = on the
    // wire, total from the scheduled arrival, time to first token).
    virtual Status submit(Request request, Completion done) = 0;

    // Client-side figures for a metric_samples row (request rate, latency
    // percentiles over the last window, cumulative counts, in-flight
    // requests and the client's own queue). Any thread.
    virtual MetricSample sample(TimePoint epoch, std::uint64_t droppedRows) const = 0;
    // Requests the client shed so far because too many already waited for
    // a connection (each also completed with queue_full). Any thread.
    virtual std::uint64_t shed() const { return 0; }

    // After the last submit. Drains (waits for every outstanding request),
    // or with `cancel` fails what is still queued or on the wire at once
    // (status shutting_down). Stops scraping. Blocks until every `done`
    // has run. Returns what the client saw, stored with the session:
    // {"http_status": {"200": n, "timeout": m, "client_shed": k, ...},
    //  "ttft_ms": {...}, "itl_ms": {...}, "client_shed": k, "server": "vllm",
    //  "server_settings": "...", "scrapes": n, "scrape_errors": m, ...}.
    virtual nlohmann::json finish(bool cancel) = 0;
    // Fails what still waits in the client's own queue, never sent (status
    // shutting_down, counted as "not_sent"): live load that stops does not
    // go on sending a backlog to a server that fell behind. With
    // `onTheWire`, what was sent too, at once (a closing console), also
    // while another thread waits in finish(). Any thread but the target's.
    virtual void failPending(bool onTheWire) { (void)onTheWire; }
};

} // namespace bp
