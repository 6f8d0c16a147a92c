// The engine: a bounded admission queue, a scheduler thread that drives the
// batching policy with the engine clock, and executor threads (one per model
// instance) that run batches on the backend.
//
// Guarantees:
//  - submit() either returns a non-OK Status (and never calls the
//    completion) or accepts the request, which then receives exactly one
//    completion: its result, DeadlineExceeded, or ShuttingDown.
//  - reconfigure() validates, then swaps the config atomically; the next
//    scheduling decision uses it; queued requests are re-bucketed; nothing in
//    flight is lost; every change is stamped into the config history.
//  - A batch is formed only when an executor is free to run it, so under load
//    requests keep accumulating into larger batches (as Triton's dynamic
//    batcher does) instead of piling up as small ready batches.
//  - shutdown(Drain) runs what is queued (static without flush-on-drain fails
//    its partial batch); shutdown(Fail) fails everything queued. In-flight
//    batches always finish. The destructor drains.
#pragma once

#include "backend.h"
#include "batcher.h"
#include "metrics.h"
#include "records.h"
#include "result.h"
#include "snapshot.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace bp {

struct EngineOptions {
    BatchingConfig batching;
    std::shared_ptr<Backend> backend; // required
    // Defaults to the steady clock. A FakeClock only makes sense together
    // with manualScheduling.
    const Clock *clock = nullptr;
    // No scheduler thread: the owner calls runSchedulerOnce() (tests, like
    // tensorflow/serving's PuppetBatchScheduler).
    bool manualScheduling = false;
};

enum class ShutdownMode { Drain, Fail };

class Engine {
public:
    // Validates the options and starts the threads. Ownership of the backend
    // is shared with the caller.
    static Result<std::unique_ptr<Engine>> create(EngineOptions options);
    ~Engine();
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // Thread-safe. `request.arrival` defaults to now, `request.id` (when 0)
    // to a fresh engine-wide id.
    Status submit(Request request, Completion done);

    // Thread-safe. `origin` says who asked ("gui", "rest", "cli", ...).
    Status reconfigure(const BatchingConfig &config, std::string origin = "api");
    BatchingConfig config() const;
    const ModelInfo &model() const { return m_backend->info(); }
    const Clock &clock() const { return *m_clock; }

    // Thread-safe; an immutable value.
    Snapshot snapshot() const;
    std::size_t queueDepth() const;

    // Observers receive records on engine threads. Add them before traffic
    // starts, or accept that earlier records were not seen.
    void addObserver(std::shared_ptr<EngineObserver> observer);
    void removeObserver(const std::shared_ptr<EngineObserver> &observer);

    // Blocks until the scheduler and executors have stopped. Idempotent.
    void shutdown(ShutdownMode mode = ShutdownMode::Drain);

    // manualScheduling only: waits until an executor is free, then makes one
    // scheduling decision at clock().now(). Returns what it did.
    struct Step {
        bool dispatched = false;
        std::size_t expired = 0;
        std::optional<TimePoint> wakeAt;
    };
    Step runSchedulerOnce();

private:
    explicit Engine(EngineOptions options);
    void start();
    void schedulerLoop();
    void executorLoop(int index);
    void execute(Batch &batch, int executor);
    void fail(std::vector<Pending> &pending, StatusCode code, const std::string &message);
    void resizeExecutors(); // requires m_mutex
    int freeExecutors() const { return m_idle - int(m_ready.size()); } // requires m_mutex
    std::shared_ptr<const std::vector<std::shared_ptr<EngineObserver>>> observers() const;

    const std::shared_ptr<Backend> m_backend;
    const Clock *const m_clock;
    const bool m_manual;
    MetricsRecorder m_metrics;
    std::atomic<std::uint64_t> m_nextRequestId{1};
    std::atomic<std::uint64_t> m_submitted{0};

    mutable std::mutex m_mutex;
    std::condition_variable m_schedulerCv;
    std::condition_variable m_executorCv;
    // guarded by m_mutex:
    Batcher m_batcher;
    std::uint64_t m_configVersion = 1;
    std::vector<ConfigChange> m_history;
    std::deque<Batch> m_ready;
    int m_idle = 0;          // executors waiting for a batch
    int m_inFlight = 0;      // batches being executed
    int m_targetInstances = 1;
    std::vector<std::thread> m_executors;
    std::vector<bool> m_executorRunning;
    bool m_schedulerWaiting = false;
    bool m_stopping = false; // no more submits
    bool m_draining = false;
    bool m_stopExecutors = false;
    bool m_shutDown = false;

    std::thread m_scheduler;
    std::mutex m_shutdownMutex;

    mutable std::mutex m_observerMutex;
    std::shared_ptr<const std::vector<std::shared_ptr<EngineObserver>>> m_observers; // copy-on-write
};

} // namespace bp
