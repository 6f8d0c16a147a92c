// The fleet's replicas (simulator.h; internal to engine/sim/): the ones
// built at the start, their events gathered for the one event loop, the
// drain at the end, and under autoscaling (fleet_scaling.h) their phases —
// asked for, serving after the cold start, draining, gone — with the time
// each is billed. The router in front (sim_routing.h) sends them requests;
// what a scaling decision and a metric sample see of them is observation
// (sim_observation.h). Not thread-safe: the event loop is its only caller.
#pragma once

#include "engine/sim/simulation/sim_replica.h"

#include "engine/workload/virtual_time.h"

#include <memory>
#include <optional>
#include <vector>

namespace bp::sim {

// The config history's changes after the first, for SimOutcome.
struct ChangeCounter final : EngineObserver {
    std::size_t changes = 0;
    void onConfigChanged(const ConfigChange &) override { ++changes; }
};

class ReplicaSet {
public:
    // Builds the first SimulatorOptions::replicas replicas, with the
    // session's observer (tagged per replica in a fleet). When the options
    // are refused (a scaled fleet with an observer, or without a decision;
    // EngineCore::create refusing the config) sim.out.status says why and
    // no replica is left.
    explicit ReplicaSet(Shared &sim);

    // Replica slots: a fixed fleet's replicas; a scaled fleet's most at
    // once — maxReplicas serving or starting, as many again draining.
    static std::size_t slotsFor(const SimulatorOptions &o);

    std::size_t size() const { return m_replicas.size(); }
    std::size_t slots() const { return m_slots; }
    Replica &operator[](std::size_t k) { return *m_replicas[k]; }
    const Replica &operator[](std::size_t k) const { return *m_replicas[k]; }
    auto begin() { return m_replicas.begin(); }
    auto end() { return m_replicas.end(); }
    auto begin() const { return m_replicas.begin(); }
    auto end() const { return m_replicas.end(); }

    // Every replica's clock to the fleet's now.
    void setClocks();

    // ---- The event loop's questions (simulator.cpp).
    // The earliest unit end (model call, or an executor free again), and
    // with autoscaling the next decision (while `scalingActive`) and cold
    // starts ending. Remembers each replica's, for runDue().
    std::optional<TimePoint> earlyEvent(bool scalingActive);
    // The earliest wake-up of an idle executor.
    std::optional<TimePoint> lateEvent() const;
    // The units due by now complete; replicas whose cold start ended serve.
    void runDue();
    // After an event: the replicas with news (or due to wake up) decide; a
    // draining replica that holds nothing more is gone.
    void settle();
    // Requests queued in the replicas (not the router's).
    std::size_t queued() const;
    // Every arrival is in and nothing is planned: each replica that still
    // holds queued requests shuts down (Drain) — one already draining fails
    // what it holds. True when a replica began to drain (`routerWaiting`:
    // requests still wait at the router, so every replica drains).
    bool drainAtEnd(bool routerWaiting);
    // The serving and draining replicas decide (after drainAtEnd()).
    void dispatchServing();
    // Cancel: units in flight finish, queued requests fail, then what is held.
    void cancel(VirtualTime &time);

    // ---- Autoscaling (fleet_scaling.h).
    // The next decision's time; the arrivals counted since the last one.
    TimePoint nextTick() const { return m_nextTick; }
    void countArrival() { ++m_arrivedInPeriod; }
    std::size_t arrivedInPeriod() const { return m_arrivedInPeriod; }
    // A decision on what the fleet shows (sim_observation.h): the
    // policy's replicas (clamped to 1..maxReplicas) asked for, cancelled
    // (the newest starting first) or drained (the least loaded serving
    // one, never the last); the next decision's time.
    void decideScale(const FleetObservation &observed);

    // ---- The end of the run: into sim.out, each replica's figures (its
    // preemptions from its scheduler's gauges), the time still billed, the
    // config changes.
    void finish();

private:
    void scaleEvent(const Replica &r);
    int billed() const;
    // A replica is gone: its time is billed, its slot free for the next one.
    void retire(Replica &r);
    // A new replica in the lowest free slot (its figures carry on the
    // slot's), starting; none when every slot is taken.
    void askReplica();

    Shared &m_sim;
    const SimulatorOptions &m_o;
    std::vector<std::unique_ptr<Replica>> m_replicas;
    std::shared_ptr<ChangeCounter> m_changes = std::make_shared<ChangeCounter>();
    std::size_t m_slots = 1; // the most replica slots (a scaled fleet reuses gone ones)
    std::vector<std::optional<TimePoint>> m_completions; // per replica, this event's
    TimePoint m_nextTick{};
    std::size_t m_arrivedInPeriod = 0;
};

} // namespace bp::sim
