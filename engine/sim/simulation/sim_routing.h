// The fleet's front (simulator.h; internal to engine/sim/): the router
// (router.h) and its FIFO queue, and the submit of each arrival to the
// replica the router chose — its prompt (the trace's prefix blocks, a
// follow-up's context), the length rule on a grown prompt, the router wait,
// and the completion that counts the outcome and releases the next turn
// (arrival_plan.h). Not thread-safe: the event loop is its only caller.
#pragma once

#include "engine/sim/simulation/replica_set.h"

#include <deque>
#include <memory>
#include <random>

namespace bp::sim {

class Routing {
public:
    explicit Routing(Shared &sim);

    // The run's arrivals and their plan (both outlive the run).
    void start(std::span<const PlannedArrival> arrivals, ArrivalPlan &plan);

    // Arrival `index` arrives now: routed, or queued behind those waiting.
    void arrive(std::size_t index, ReplicaSet &replicas);
    // Those waiting go to replicas while one is below the router's limit.
    void drain(ReplicaSet &replicas);
    // Every replica is shut down: those waiting go to one anyway (and fail there).
    void routeRest(ReplicaSet &replicas);
    // Cancel: those never routed fail at the router.
    void failWaiting();

    std::size_t waiting() const { return m_queue.size(); }
    const Router::Counters &counters() const { return m_router.counters(); }

private:
    struct Waiting {
        std::size_t index;
        TimePoint arrival;
    };
    // Routes arrival `index` (it arrived at `arrival`) to a replica below
    // the router's limit; false when every replica is at it.
    bool route(std::size_t index, TimePoint arrival, ReplicaSet &replicas);
    // The prompt: the trace's blocks in front (prefix_tokens.h), a
    // follow-up's context before it; without content to share (no cache,
    // blocks or conversation) only its length matters.
    std::vector<TokenId> promptOf(std::size_t index);
    void submit(Replica &rep, std::size_t index, TimePoint arrival);

    Shared &m_sim;
    const SimulatorOptions &m_o;
    Router m_router;
    std::vector<ReplicaLoad> m_loads;
    std::unique_ptr<bool[]> m_eligible; // per replica slot: serving, and below the router's limit
    std::deque<Waiting> m_queue;
    std::span<const PlannedArrival> m_arrivals;
    ArrivalPlan *m_plan = nullptr;
    std::mt19937_64 m_promptRng;
};

} // namespace bp::sim
