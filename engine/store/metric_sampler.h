// Takes an engine snapshot about once a second and queues it as a
// metric_samples row through the session's TraceSink.
//
// Threading: start() runs a sampler thread that waits on a condition
// variable between samples, so stop() returns at once. sampleNow() may be
// called from any thread (tests and virtual-clock replays call it instead of
// starting the thread). The engine and the sink must outlive the sampler.
#pragma once

#include "store_types.h"
#include "trace_sink.h"

#include "engine/exec/engine.h"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace bp {

// The stored form of a snapshot: window rates and latencies, cumulative
// counters; `at` is the snapshot time minus `epoch`.
MetricSample sampleOf(const Snapshot &snapshot, TimePoint epoch, std::uint64_t droppedRows);

class MetricSampler {
public:
    // Samples the engine's snapshot.
    MetricSampler(const Engine &engine, TraceSink &sink, Duration period = std::chrono::seconds(1));
    // Samples whatever `take` returns (a remote replay's client-side
    // figures); `take` runs on the sampler thread or sampleNow()'s caller.
    MetricSampler(std::function<MetricSample()> take, TraceSink &sink,
                  Duration period = std::chrono::seconds(1));
    ~MetricSampler();
    MetricSampler(const MetricSampler &) = delete;
    MetricSampler &operator=(const MetricSampler &) = delete;

    void start();
    void stop(); // idempotent
    void sampleNow();

private:
    void run();

    TraceSink &m_sink;
    const std::function<MetricSample()> m_take;
    const Duration m_period;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    bool m_stop = false; // guarded by m_mutex
    std::thread m_thread;
};

} // namespace bp
