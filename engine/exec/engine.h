// The engine: its executor threads around the EngineCore (engine_core.h),
// which holds everything else — admission, the config, the executor step
// (decide -> run on the backend -> hand back -> record and complete),
// metrics and snapshots — and which the simulator drives too, on a virtual
// clock. What runs when is the Scheduler's decision (engine/sched/scheduler.h,
// the seam); the rest of the request path is in pieces around it:
//   submit -> interceptors' answer() (response cache) -> Scheduler::admit
//   executor: Scheduler::poll -> unit of work -> MemoryGuard (decorates the
//   Backend) -> Scheduler::finished (the requests that ended, with their
//   answers) -> interceptors' observe() (cache, SLO feed) -> metrics,
//   observers -> completions.
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
//    name (whole-config writes would lose each other's changes).
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

#include "engine/core/spin_wait.h"
#include "engine_core.h"

#include <atomic>
#include <condition_variable>
#include <memory>
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

class Engine final : private ExecutorDriver {
public:
    // Validates the options and starts the threads. Ownership of the backend
    // is shared with the caller.
    static Result<std::unique_ptr<Engine>> create(EngineOptions options);
    ~Engine() override;
    Engine(const Engine &) = delete;
    Engine &operator=(const Engine &) = delete;

    // Thread-safe. `request.arrival` defaults to now, `request.id` (when 0)
    // to a fresh engine-wide id.
    Status submit(Request request, Completion done)
    {
        return m_core->submit(std::move(request), std::move(done));
    }

    // Thread-safe. Applies `patch` to the config in force at this moment
    // (not to the one the caller last read), validates the result, and
    // swaps it in. `origin` says who asked ("gui", "rest", "cli", ...). On
    // failure nothing changes and the Status names the field. The result
    // holds the whole config right before and right after, and the
    // change's version (0: the patch changed nothing).
    Result<ConfigUpdate> update(const ConfigPatch &patch, std::string origin = "api")
    {
        return m_core->update(patch, std::move(origin));
    }
    // Thread-safe. Replaces every field: update(ConfigPatch::whole(config)).
    // For a config file or a replay's settings; an interactive writer
    // sends a patch so that it cannot revert someone else's change.
    Status reconfigure(const BatchingConfig &config, std::string origin = "api")
    {
        return update(ConfigPatch::whole(config), std::move(origin)).status();
    }
    BatchingConfig config() const { return m_core->config(); }
    const ModelInfo &model() const { return m_core->model(); }
    // The model itself, e.g. for the console's short capacity measurement
    // (Backend::run is safe to call beside the executors).
    std::shared_ptr<Backend> backend() const { return m_core->backend(); }
    const Clock &clock() const { return m_core->clock(); }

    // Thread-safe; an immutable value.
    Snapshot snapshot() const { return m_core->snapshot(); }
    std::size_t queueDepth() const { return m_core->queueDepth(); }
    // True while the scheduling thread is blocked with no wake-up planned,
    // which is where an engine with nothing queued must end up: it then uses
    // no CPU at all. Always false with manualScheduling. For tests.
    bool schedulerIdle() const;

    // Observers receive records on engine threads. Add them before traffic
    // starts, or accept that earlier records were not seen.
    void addObserver(std::shared_ptr<EngineObserver> observer) { m_core->addObserver(std::move(observer)); }
    void removeObserver(const std::shared_ptr<EngineObserver> &observer) { m_core->removeObserver(observer); }

    // Blocks until every executor has stopped. Idempotent.
    void shutdown(ShutdownMode mode = ShutdownMode::Drain);

    // manualScheduling only: one scheduling decision at clock().now(); a
    // dispatched unit runs on the calling thread before this returns.
    struct Step {
        bool dispatched = false;
        std::size_t expired = 0;
        std::optional<TimePoint> wakeAt;
    };
    Step runSchedulerOnce();

private:
    explicit Engine(const EngineOptions &options);
    // ExecutorDriver
    bool pokeLocked() override;
    void wake() override { m_leaderCv.notify_one(); }
    void instancesChangedLocked(int instances) override;

    void executorLoop(int index);
    // The leader's part of executorLoop: decides, and sleeps or spins until
    // the next decision. Returns the unit to run, or nullopt when this
    // thread must stop. Requires the core's mutex; returns with it held.
    std::optional<WorkUnit> lead(int index) REQUIRES(m_core->mutex());
    bool mustExit(int index) const REQUIRES(m_core->mutex());
    void resizeExecutors() REQUIRES(m_core->mutex());

    const bool m_manual;
    const Duration m_spin;
    std::unique_ptr<EngineCore> m_core; // set by create()
    // Bumped under the core's mutex whenever the leader may have something
    // new to decide; a spinning leader watches it instead of sleeping.
    std::atomic<std::uint64_t> m_pokes{0};
    std::condition_variable_any m_leaderCv;   // the leader's timed/untimed wait
    std::condition_variable_any m_followerCv; // idle executors waiting to lead
    // guarded by the core's mutex:
    bool m_hasLeader GUARDED_BY(m_core->mutex()) = false;
    // blocked on m_leaderCv: submit must notify
    bool m_leaderSleeping GUARDED_BY(m_core->mutex()) = false;
    // ... with no wake-up time (schedulerIdle())
    bool m_leaderIdle GUARDED_BY(m_core->mutex()) = false;
    int m_targetInstances GUARDED_BY(m_core->mutex()) = 1;
    std::vector<std::thread> m_executors GUARDED_BY(m_core->mutex());
    std::vector<bool> m_executorRunning GUARDED_BY(m_core->mutex());

    std::mutex m_shutdownMutex;
    bool m_shutDown = false; // guarded by m_shutdownMutex
};

} // namespace bp
