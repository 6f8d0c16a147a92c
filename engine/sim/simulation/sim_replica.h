// One replica of a simulated fleet (simulator.h; internal to engine/sim/):
// an EngineCore with its own clock, cost backend, virtual executors and the
// units they run, driven by the simulator's one event loop (simulator.cpp).
// Not thread-safe: the event loop is its only caller.
#pragma once

#include "engine/sim/simulation/simulator.h"

#include "engine/exec/engine_core.h"

#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace bp::sim {

// What the replicas share with the event loop.
struct Shared {
    const SimulatorOptions &o;
    NoiseDraws noise;
    TimePoint now;
    SimOutcome out;
    // Requests that waited in the router's queue: id -> how long.
    std::unordered_map<std::uint64_t, Duration> routerWaits;
    // Decode runs (SimulatorOptions::coalesceDecodeRuns): taken, and the
    // time a run's steps end by (the next scaling decision, which reads
    // the replicas' KV).
    bool coalesce = false;
    std::optional<TimePoint> runHorizon;
};

// A unit on a virtual executor: its model call ends at run.end (it is then
// handed back and its requests complete, as the engine's executor does
// right after the model returns); the executor is free at `free`, after the
// serving overhead.
struct Running {
    WorkUnit unit;
    UnitRun run;
    TimePoint free{};
    bool finished = false;
    TimePoint nextEvent() const { return finished ? free : run.end; }
};

// A fleet replica's records on their way to the session's observer: the
// replica and the router wait stamped, batch ids made unique across
// replicas, config changes from replica 0 only.
struct ReplicaTagger final : EngineObserver {
    EngineObserver &to;
    const Shared &shared;
    int replica, replicas;
    std::vector<RequestRecord> copy;
    ReplicaTagger(EngineObserver &target, const Shared &s, int r, int n)
        : to(target), shared(s), replica(r), replicas(n)
    {
    }
    std::uint64_t global(std::uint64_t local) const;
    RequestRecord tag(const RequestRecord &r) const;
    void onBatchCompleted(const BatchRecord &b, std::span<const RequestRecord> rs) override;
    void onRequestFailed(const RequestRecord &r) override { to.onRequestFailed(tag(r)); }
    void onRequestServedFromCache(const RequestRecord &r) override { to.onRequestServedFromCache(tag(r)); }
    void onConfigChanged(const ConfigChange &c) override;
};

// One engine of the fleet: its clock (set to the fleet's time by the event
// loop; its cost backend advances it while a unit runs), its core, its
// virtual executors and the units they run.
struct Replica final : ExecutorDriver {
    Shared &sim;
    int index;
    VirtualClock clock;
    std::shared_ptr<CostBackend> backend;
    // Assembled by EngineCore::create, as the engine's; null when it
    // refused the config (`refused` says why).
    std::unique_ptr<EngineCore> core;
    Status refused;
    std::vector<bool> busy;
    std::vector<TimePoint> idleSince; // per executor: when it last became free
    // Units in flight; by pointer, so that sorting them moves no unit.
    std::vector<std::unique_ptr<Running>> running;
    std::optional<TimePoint> wakeAt; // the scheduler's next decision time, when an executor is free
    std::size_t instances;
    bool draining = false;
    // Something happened to it since it last decided (a request came, a
    // unit ended, it shut down): it decides after this event. A replica
    // with nothing new decides only at its wake-up, as the engine's idle
    // leader sleeps until then.
    bool dirty = true;
    int outstanding = 0;
    ReplicaFigures fig;

    // Its place in a scaled fleet (fleet_scaling.h); a fixed fleet's are Ready.
    ReplicaPhase phase = ReplicaPhase::Ready;
    TimePoint askedAt{}, readyAt{};

    // A decode run in flight on `executor` (Shared::coalesce): the i-th
    // step's model call from start(i) to ends[i], the executor free again at
    // frees[i], when the next step is decided and starts. `ended`: its last
    // model call is over and its tokens are in the books; the executor is
    // busy until frees.back().
    struct DecodeSteps {
        DecodeRun run;
        int executor = 0;
        TimePoint firstStart{}; // the first step's, late by the executor's wake-up
        std::vector<TimePoint> ends, frees;
        bool ended = false;
        TimePoint start(std::size_t i) const { return i == 0 ? firstStart : frees[i - 1]; }
        // Its steps decided by `t` (the first when the run was, each next
        // one as the executor frees): at least the first.
        std::size_t decidedBy(TimePoint t) const;
    };
    std::optional<DecodeSteps> decodeRun;
    // A request arrives for it: the run ends with the step decided by now
    // (the request joins at the next decision, as it would between steps).
    void cutDecodeRun();
    // The tokens in its KV cache now, a run's steps counted as they start.
    std::int64_t kvTokensNow() const;

    // Its clock starts at `at` (the simulation's start, or when it was asked for).
    Replica(Shared &s, int i, TimePoint at);

    // ExecutorDriver: the event loop decides after every event anyway.
    bool pokeLocked() override { return false; }
    void wake() override {}
    void instancesChangedLocked(int n) override;

    int freeExecutor() const;
    // Its next events, kept as they change (the event loop asks after every
    // event, of every replica): the end of a unit's model call or of an
    // executor's overhead, and the scheduler's wake-up while an executor is free.
    std::optional<TimePoint> nextCompletion() const { return m_next; }
    std::optional<TimePoint> wakeUp() const { return m_wake; }
    // The scheduler lateness charged to a unit `executor` starts now: none
    // when it only just became free (the engine's leader goes straight on
    // to the next unit), else its wake-up (CostModel::dispatchLateness).
    Duration lateness(int executor);
    // The engine's executor starts `unit` now, late by its wake-up: the
    // model call runs on the virtual clock, which the cost backend advances
    // by the unit's charged cost.
    void start(WorkUnit &&unit, int executor);
    // Finishes the units whose model call ended by now, frees executors.
    void completeDue();
    // The leader's part of the engine loop: while an executor is free, the
    // engine decides (EngineCore::decide, the same call its threads make).
    void dispatchReady();
    // The core's one drain (EngineCore::shutdown, failHeld); it decides again.
    void stop(ShutdownMode mode);
    void failHeld();

private:
    // After running, busy or wakeAt changed: nextCompletion() and wakeUp() again.
    void refreshEvents();
    // With `executor` free: a decode run instead of a decision, when the
    // engine has one (EngineCore::beginDecodeRunLocked); its steps charged now.
    bool startDecodeRun(int executor);
    // The run's last model call is over: the books and the model as its
    // steps leave them.
    void endDecodeRun();
    // The executor is free after the run's last step.
    void freeDecodeRun();
    std::optional<TimePoint> m_next, m_wake;
};

} // namespace bp::sim
