// The engine: admission, executor threads, and completion. What runs when
// is the Scheduler's decision (engine/scheduler.h, the seam); the rest of the
// request path is in pieces around it:
//   submit -> interceptors' answer() (response cache) -> Scheduler::admit
//   executor: Scheduler::poll -> unit of work -> MemoryGuard (decorates the
//   Backend) -> outcome.h builds responses/records -> interceptors'
//   observe() (cache, SLO feed) -> metrics, observers -> completions ->
//   Scheduler::finished.
//   Config changes: ConfigVersions (validate, stamp, history) ->
//   Scheduler::reconfigure and the interceptors' configured().
//
// Threads (leader/followers): at any moment one idle executor holds the
// scheduler role. It drives the scheduler — sleeping or spinning until the
// next decision time or an arrival — and when the scheduler hands out a
// unit of work it hands the scheduler role to an idle follower and runs the
// unit itself. So the work never waits for a thread hand-off (tens of µs on
// a VM), a batch is formed only when an instance is free to run it (under
// load, requests keep accumulating into larger batches, as with Triton's
// dynamic batcher), and with one instance a single thread alternates
// between the two roles.
//
// Guarantees:
//  - submit() either returns a non-OK Status (and never calls the
//    completion) or accepts the request, which then receives exactly one
//    completion: its result, DeadlineExceeded, or ShuttingDown.
//  - update() applies a ConfigPatch (the fields one writer changes) to the
//    config in force, under the engine lock, validates the result and swaps
//    it in atomically; the next scheduling decision uses it; queued requests
//    are re-bucketed; nothing in flight is lost; every change is stamped
//    into the config history. A writer never reverts a field it did not
//    name (issue 12.3: whole-config writes lost each other's changes).
//    reconfigure() is update() with every field (ConfigPatch::whole).
//  - Self-tuning (docs/optimizations.md): the adaptive delay lives in the
//    Batcher; the SLO controller (an interceptor) and the memory guard
//    change the config through the same applyLocked() path as an operator,
//    so their changes are validated (an invalid one is refused and reported
//    on stderr), stamped and shown like any other (origins
//    kSloControllerOrigin, kMemoryGuardOrigin). The memory guard only ever
//    lowers memory_batch_limit. A response-cache hit completes inside
//    submit(), on the caller's thread, after the engine's locks are released.
//  - Observers and the backend are foreign code: whatever they throw
//    (std::exception or not, also while the out-of-memory split retries) is
//    caught. A throwing backend fails its batch with status Internal; a
//    throwing observer loses only its own notification. Every accepted
//    request still receives exactly one completion.
//  - shutdown(Drain) runs what is queued (static without flush-on-drain fails
//    its partial batch); shutdown(Fail) fails everything queued. In-flight
//    batches always finish. The destructor drains.
#pragma once

#include "backend.h"
#include "config_patch.h"
#include "config_versions.h"
#include "interceptors.h"
#include "memory_guard.h"
#include "metrics.h"
#include "observer_list.h"
#include "records.h"
#include "result.h"
#include "scheduler.h"
#include "snapshot.h"
#include "step_work.h"

#include <array>
#include <atomic>
#include <condition_variable>
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
    // No threads at all: the owner calls runSchedulerOnce(), which makes one
    // decision at clock().now() and runs a dispatched batch on the calling
    // thread (deterministic tests, like tensorflow/serving's
    // PuppetBatchScheduler).
    bool manualScheduling = false;
    // How long the scheduling thread busy-waits for imminent work (an
    // arrival, or the next dispatch time) before sleeping on a condition
    // variable. On this platform a timed sleep overshoots by ~50 µs at p50
    // and ~110 µs at p99, and waking an idle vCPU costs as much
    // (docs/benchmarks.md), so timed waits end `spin` early and spin the
    // rest. Costs up to one core while traffic flows, nothing when idle.
    // 0 = never spin.
    Duration spin = std::chrono::microseconds(150);
    // Ask the backend at start-up for the largest batch that fits in device
    // memory at the longest bucket (CUDA backends answer; CPU ones do not)
    // and start with that as memory_batch_limit.
    bool probeMemory = true;
};

enum class ShutdownMode { Drain, Fail };

// What Engine::update did.
struct ConfigUpdate {
    BatchingConfig before;     // the whole config right before the patch
    BatchingConfig after;      // ... and right after it
    std::uint64_t version = 0; // the change's version; 0 = the patch changed nothing
};

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

    // Thread-safe. Applies `patch` to the config in force at this moment
    // (not to the one the caller last read), validates the result, and
    // swaps it in. `origin` says who asked ("gui", "rest", "cli", ...). On
    // failure nothing changes and the Status names the field. The result
    // holds the whole config right before and right after, and the
    // change's version (0: the patch changed nothing).
    Result<ConfigUpdate> update(const ConfigPatch &patch, std::string origin = "api");
    // Thread-safe. Replaces every field: update(ConfigPatch::whole(config)).
    // For a config file or a replay's settings; an interactive writer
    // sends a patch so that it cannot revert someone else's change.
    Status reconfigure(const BatchingConfig &config, std::string origin = "api");
    BatchingConfig config() const;
    const ModelInfo &model() const { return m_backend->info(); }
    // The model itself, e.g. for the console's short capacity measurement
    // (Backend::run is safe to call beside the executors).
    std::shared_ptr<Backend> backend() const { return m_backend; }
    const Clock &clock() const { return *m_clock; }

    // Thread-safe; an immutable value.
    Snapshot snapshot() const;
    std::size_t queueDepth() const;
    // True while the scheduling thread is blocked with no wake-up planned,
    // which is where an engine with nothing queued must end up: it then uses
    // no CPU at all. Always false with manualScheduling. For tests.
    bool schedulerIdle() const;

    // Observers receive records on engine threads. Add them before traffic
    // starts, or accept that earlier records were not seen.
    void addObserver(std::shared_ptr<EngineObserver> observer);
    void removeObserver(const std::shared_ptr<EngineObserver> &observer);

    // Blocks until every executor has stopped. Idempotent.
    void shutdown(ShutdownMode mode = ShutdownMode::Drain);

    // manualScheduling only: one scheduling decision at clock().now(); a
    // dispatched batch runs on the calling thread before this returns.
    struct Step {
        bool dispatched = false;
        std::size_t expired = 0;
        std::optional<TimePoint> wakeAt;
    };
    Step runSchedulerOnce();

private:
    // A unit of work the scheduler handed out: exactly one is set.
    struct Work {
        std::optional<Batch> batch;
        std::shared_ptr<StepWork> step;
    };
    explicit Engine(EngineOptions options);
    void executorLoop(int index);
    // Leader part of executorLoop: returns the work to run, or nullopt when
    // this thread must stop. Requires `lock` held; returns with it held.
    std::optional<Work> lead(std::unique_lock<std::mutex> &lock, int index);
    bool mustExit(int index) const; // requires m_mutex
    // Runs a unit without m_mutex and completes its requests. A batch runs
    // on the guarded backend; a step on the model's StepModel, and its
    // outcome goes back to the scheduler (finished()) before completions.
    void run(Work &work, int executor);
    void execute(Batch &batch, int executor);
    void executeStep(StepWork &step, int executor);
    // Without m_mutex: fails each with its own status.
    void failEach(std::vector<Scheduler::Failure> &failures, const BatchingConfig &config);
    // Requires m_mutex. Applies `patch` through m_config (validated,
    // stamped) and hands the new config to the scheduler (a new one when
    // the policy needs another kind; queued requests it refuses go to
    // m_refused), the metrics and the interceptors. `change` has version 0
    // when nothing changed.
    Status applyLocked(const ConfigPatch &patch, std::string origin, const std::string &why,
                       ConfigChange &change);
    // applyLocked for the SLO controller and the memory guard: a refusal is
    // reported on stderr (there is no caller to return it to).
    void applyControllerLocked(const ConfigPatch &patch, std::string origin, const std::string &why,
                               ConfigChange &change);
    // Requires m_mutex. Applies what the interceptors propose at `now`;
    // true when one proposed something (applied or refused).
    bool applyProposalsLocked(TimePoint now, ConfigChange &change);
    void notifyConfigChanged(const ConfigChange &change);
    void lowerMemoryLimit(const MemoryGuard::Lowering &lowering);
    // Completes `pending` with `code`. Runs without m_mutex: `config` (for the
    // observers' bucket) is the one the caller read under it.
    void fail(std::vector<Pending> &pending, StatusCode code, const std::string &message,
              const BatchingConfig &config);
    void resizeExecutors(); // requires m_mutex

    const std::shared_ptr<Backend> m_backend;
    MemoryGuard m_guard; // decorates m_backend; the executors run through it
    const Clock *const m_clock;
    const bool m_manual;
    const Duration m_spin;
    MetricsRecorder m_metrics;
    CacheInterceptor m_cache;
    SloInterceptor m_slo;
    const std::array<Interceptor *, 2> m_interceptors{&m_cache, &m_slo};
    std::atomic<std::uint64_t> m_nextRequestId{1};
    std::atomic<std::uint64_t> m_submitted{0};
    // Bumped under m_mutex whenever the leader may have something new to
    // decide; a spinning leader watches it instead of sleeping.
    std::atomic<std::uint64_t> m_pokes{0};

    mutable std::mutex m_mutex;
    std::condition_variable m_leaderCv;   // the leader's timed/untimed wait
    std::condition_variable m_followerCv; // idle executors waiting to lead
    // guarded by m_mutex:
    std::unique_ptr<Scheduler> m_scheduler;
    // The config in force (an immutable value replaced on every change:
    // code that runs after the lock is released, like fail(), keeps a
    // reference taken under it), its version and history.
    ConfigVersions m_config;
    // Queued requests a new kind of scheduler refused on a policy switch;
    // update() fails them after releasing the lock.
    std::vector<Scheduler::Failure> m_refused;
    bool m_hasLeader = false;
    bool m_leaderSleeping = false; // blocked on m_leaderCv: submit must notify
    bool m_leaderIdle = false;     // ... with no wake-up time (schedulerIdle())
    int m_inFlight = 0;            // units (batches, steps) being executed
    int m_targetInstances = 1;
    std::vector<std::thread> m_executors;
    std::vector<bool> m_executorRunning;
    bool m_stopping = false; // no more submits
    bool m_draining = false;
    bool m_shutDown = false;

    std::mutex m_shutdownMutex;
    ObserverList m_observers;
};

} // namespace bp
