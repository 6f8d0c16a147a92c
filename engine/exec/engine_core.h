// The engine without its threads: admission, the config, the executor step
// and what it records. Two drivers run the same core:
//  - Engine (engine.h): executor threads (leader/followers) on the real
//    clock and the model; with manualScheduling, the caller's thread on a
//    fake clock.
//  - Simulator (engine/sim/simulation/simulator.h): an event queue on a virtual clock,
//    over a cost-model backend whose run charges predicted time instead of
//    computing (engine/sim/simulation/cost_backend.h).
// So the simulator cannot drift from the engine: admission, the response
// cache, the SLO controller, config versions and history, the memory guard,
// the outcome of every unit, metrics and snapshots are this one code.
//
// The executor step (executor_step.cpp), the one loop both drivers turn:
//   decide()  under the lock: interceptors propose config changes, the
//             scheduler polls, what expired is failed, a unit is handed out
//             (or the time of the next decision is returned);
//   run()     without the lock: the unit runs on the backend through the
//             memory guard, timed by the core's clock;
//   finish()  the unit goes back to the scheduler (under the lock), which
//             says which requests ended; they are recorded (metrics,
//             interceptors, observers) and completed, without the lock.
//
// Locking: one mutex, mutex(), guards the scheduler, the config and the
// driver's bookkeeping (the annotations are checked by clang's
// -Wthread-safety, engine/core/thread_annotations.h). Completions, observers and
// the backend run without it. The driver is told of news under the lock
// (ExecutorDriver::pokeLocked) and woken after it is released.
#pragma once

#include "engine/config/config_patch.h"
#include "engine/config/config_versions.h"
#include "engine/core/records.h"
#include "engine/core/result.h"
#include "engine/core/thread_annotations.h"
#include "engine/metrics/metrics.h"
#include "engine/metrics/snapshot.h"
#include "engine/model/backend.h"
#include "engine/sched/decode_runs.h"
#include "engine/sched/scheduler.h"
#include "engine/sched/work_unit.h"
#include "interceptors.h"
#include "memory_guard.h"
#include "observer_list.h"

#include <array>
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

namespace bp {

enum class ShutdownMode { Drain, Fail };

// What Engine::update did.
struct ConfigUpdate {
    BatchingConfig before;     // the whole config right before the patch
    BatchingConfig after;      // ... and right after it
    std::uint64_t version = 0; // the change's version; 0 = the patch changed nothing
};

// What drives the executor step: the engine's threads, or the simulator.
class ExecutorDriver {
public:
    virtual ~ExecutorDriver() = default;
    // Under the core's lock: a decision may be possible earlier than the
    // driver planned (an arrival, a step's end, a config change). True when
    // the driver must be woken with wake() once the lock is released.
    virtual bool pokeLocked() = 0;
    virtual void wake() = 0;
    // Under the core's lock: the config now asks for `instances` executors.
    virtual void instancesChangedLocked(int instances) = 0;
};

class EngineCore {
public:
    // The one way to a core, for both drivers: validates `config` (the
    // knobs, and a scheduler `backend` supports), sizes a paged model's KV
    // pool from it (Backend::prepareKv; Unavailable — another engine holds
    // blocks of it — keeps the pool as it is), and with `probeMemory` asks
    // the backend for the largest batch that fits in device memory at the
    // longest bucket and starts with that as memory_batch_limit. InvalidArgument
    // without a backend. `clock` and `driver` outlive the core.
    static Result<std::unique_ptr<EngineCore>> create(BatchingConfig config, std::shared_ptr<Backend> backend,
                                                      const Clock &clock, ExecutorDriver &driver,
                                                      bool probeMemory = false);
    EngineCore(const EngineCore &) = delete;
    EngineCore &operator=(const EngineCore &) = delete;

    // ---- The engine's API (engine.h documents the guarantees) -------------
    Status submit(Request request, Completion done) EXCLUDES(m_mutex);
    Result<ConfigUpdate> update(const ConfigPatch &patch, std::string origin) EXCLUDES(m_mutex);
    BatchingConfig config() const EXCLUDES(m_mutex);
    const ModelInfo &model() const { return m_backend->info(); }
    std::shared_ptr<Backend> backend() const { return m_backend; }
    const Clock &clock() const { return m_clock; }
    Snapshot snapshot() const EXCLUDES(m_mutex);
    std::size_t queueDepth() const EXCLUDES(m_mutex);
    void addObserver(std::shared_ptr<EngineObserver> observer) { m_observers.add(std::move(observer)); }
    void removeObserver(const std::shared_ptr<EngineObserver> &observer) { m_observers.remove(observer); }

    // ---- The executor step (executor_step.cpp) ----------------------------
    Mutex &mutex() const RETURN_CAPABILITY(m_mutex) { return m_mutex; }

    struct Decision {
        std::optional<WorkUnit> unit;    // to run now, on the executor that decided
        std::optional<TimePoint> wakeAt; // no unit: when to decide again (nullopt: on news)
        bool busy = false;               // a unit in flight decides what comes next
        std::size_t expired = 0;         // requests this decision failed (deadline passed)
    };
    // Decides at the clock's now until it has a unit to hand out or nothing
    // to do before wakeAt. Requires mutex() held; returns with it held,
    // having released it meanwhile to complete failed requests and to tell
    // observers of a controller's config change. A unit handed out is in
    // flight until finish().
    Decision decide() REQUIRES(m_mutex);
    // Runs `unit` on the backend (a batch through the memory guard, a step
    // on the model's StepModel), timed by the clock. Without the lock.
    UnitRun run(WorkUnit &unit, int executor) EXCLUDES(m_mutex);
    // Hands `unit` back to the scheduler, then records and completes the
    // requests that ended with it. Without the lock.
    void finish(WorkUnit &unit, UnitRun &run) EXCLUDES(m_mutex);

    // ---- Decode runs: the simulator's coalesced steps (simulator.h) --------
    // Not the executor step: only the simulator calls these. Instead of
    // decide(), with a free executor: the run of decode steps the scheduler
    // would hand out one after another while no request arrives, when it
    // offers them (DecodeRunSource, sched/decode_runs.h), at most
    // `maxSteps`; nullopt when there is none or a step could go otherwise
    // (shutting down, the response cache or the SLO controller on). In
    // flight until endDecodeRunLocked().
    std::optional<DecodeRun> beginDecodeRunLocked(int maxSteps) REQUIRES(m_mutex);
    // Its first ends.size() steps ran, the i-th model call ending at
    // ends[i]: the sequences hold their tokens. The steps' batch records
    // and metrics are not made (the caller counts them).
    void endDecodeRunLocked(std::span<const TimePoint> ends) REQUIRES(m_mutex);

    // ---- Shutdown: the one drain, for both drivers -------------------------
    // No more submits; with Drain what is queued still runs (partial batches
    // leave; a policy that will not run the rest fails it at the next
    // decision), with Fail it fails now with ShuttingDown.
    void shutdown(ShutdownMode mode) EXCLUDES(m_mutex);
    // Fails with ShuttingDown whatever the scheduler still holds: a drain
    // whose driver has nothing more to run.
    void failHeld() EXCLUDES(m_mutex);

    // ---- The driver's queries (under the lock) ----------------------------
    bool stoppingLocked() const REQUIRES(m_mutex) { return m_stopping; }
    // Stopping and nothing left to run.
    bool stoppedLocked() const REQUIRES(m_mutex) { return m_stopping && m_scheduler->size() == 0; }
    int instancesLocked() const REQUIRES(m_mutex) { return m_config.current()->instances; }
    // The scheduler in force, for a driver's own statistics (the
    // simulator's preemption count). Requires the lock.
    const Scheduler &schedulerLocked() const REQUIRES(m_mutex) { return *m_scheduler; }

private:
    EngineCore(BatchingConfig config, std::shared_ptr<Backend> backend, const Clock &clock,
               ExecutorDriver &driver);
    // Fails `rest` with ShuttingDown and the one shutdown message. Without the lock.
    void failShutDown(std::vector<Pending> &rest, const BatchingConfig &config) EXCLUDES(m_mutex);
    // Requires m_mutex. Applies `patch` through m_config (validated,
    // stamped) and hands the new config to the scheduler (a new one when
    // the policy needs another kind; queued requests it refuses go to
    // m_refused), the metrics, the interceptors and the driver. `change`
    // has version 0 when nothing changed.
    Status applyLocked(const ConfigPatch &patch, std::string origin, const std::string &why,
                       ConfigChange &change) REQUIRES(m_mutex);
    // applyLocked for the SLO controller and the memory guard: a refusal is
    // reported on stderr (there is no caller to return it to).
    void applyControllerLocked(const ConfigPatch &patch, std::string origin, const std::string &why,
                               ConfigChange &change) REQUIRES(m_mutex);
    // Applies what the interceptors propose at `now`; true when one
    // proposed something (applied or refused).
    bool applyProposalsLocked(TimePoint now, ConfigChange &change) REQUIRES(m_mutex);
    void notifyConfigChanged(const ConfigChange &change) EXCLUDES(m_mutex);
    void lowerMemoryLimit(const MemoryGuard::Lowering &lowering) EXCLUDES(m_mutex);
    // Records the requests that ended with a unit and completes them.
    void deliver(UnitDone &done, TimePoint at) EXCLUDES(m_mutex);
    // Without the lock: fails each with its own status, in queue `config`'s buckets.
    void failEach(std::vector<Scheduler::Failure> &failures, const BatchingConfig &config) EXCLUDES(m_mutex);
    void failWith(std::vector<Pending> &pending, StatusCode code, const std::string &message,
                  const BatchingConfig &config) EXCLUDES(m_mutex);

    const std::shared_ptr<Backend> m_backend;
    MemoryGuard m_guard; // decorates m_backend; batches run through it
    const Clock &m_clock;
    ExecutorDriver &m_driver;
    MetricsRecorder m_metrics;
    CacheInterceptor m_cache;
    SloInterceptor m_slo;
    const std::array<Interceptor *, 2> m_interceptors{&m_cache, &m_slo};
    std::atomic<std::uint64_t> m_nextRequestId{1};
    std::atomic<std::uint64_t> m_submitted{0};
    ObserverList m_observers;

    mutable Mutex m_mutex;
    // Unit ids, one sequence for the engine's life: kept across a switch
    // to another kind of scheduler, so no two units of a session share one.
    const std::shared_ptr<UnitIds> m_unitIds = std::make_shared<UnitIds>();
    std::unique_ptr<Scheduler> m_scheduler GUARDED_BY(m_mutex);
    // The config in force (an immutable value replaced on every change:
    // code that runs after the lock is released keeps a reference taken
    // under it), its version and history.
    ConfigVersions m_config GUARDED_BY(m_mutex);
    // Queued requests a new kind of scheduler refused on a policy switch;
    // update() fails them after releasing the lock.
    std::vector<Scheduler::Failure> m_refused GUARDED_BY(m_mutex);
    int m_inFlight GUARDED_BY(m_mutex) = 0;      // units handed out, not yet finished
    bool m_stopping GUARDED_BY(m_mutex) = false; // no more submits
    bool m_draining GUARDED_BY(m_mutex) = false; // ... and what is queued still runs
};

} // namespace bp
