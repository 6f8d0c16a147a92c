#include "engine/sim/simulation/sim_observation.h"

#include <algorithm>

namespace bp::sim {

FleetObservation observeFleet(const ReplicaSet &replicas, std::size_t routerWaiting, const Shared &sim)
{
    FleetObservation ob;
    ob.atS = toSeconds(sim.now - sim.o.start);
    double kv = 0;
    for (const auto &r : replicas) {
        if (r->phase == ReplicaPhase::Starting)
            ++ob.starting;
        if (r->phase != ReplicaPhase::Ready)
            continue;
        ++ob.ready;
        MutexLock lock(r->core->mutex());
        const Scheduler &scheduler = r->core->schedulerLocked();
        if (const auto g = scheduler.gauges(sim.now).iteration) {
            // Sequences, as a live server's batchpilot_waiting_sequences and
            // batchpilot_running_sequences say (the scheduler's size() counts both).
            ob.waiting += double(g->waiting);
            ob.running += double(g->running);
            if (g->kvCapacityTokens > 0)
                kv += double(g->kvTokens) / double(g->kvCapacityTokens);
        } else {
            // Requests queued; the rest of what the replica holds is in its batches.
            const auto queued = double(scheduler.size());
            ob.waiting += queued;
            ob.running += std::max(0.0, double(r->outstanding) - queued);
        }
    }
    ob.waiting += double(routerWaiting);
    ob.kvUsage = ob.ready > 0 ? kv / ob.ready : 0;
    ob.arrivalRate = double(replicas.arrivedInPeriod()) / toSeconds(sim.o.scaling->period);
    return ob;
}

Snapshot snapshotOf(const ReplicaSet &replicas)
{
    if (replicas.size() == 1)
        return replicas[0].core->snapshot();
    std::vector<Snapshot> each;
    each.reserve(replicas.size());
    for (const auto &r : replicas)
        if (r->phase != ReplicaPhase::Gone && r->phase != ReplicaPhase::Starting)
            each.push_back(r->core->snapshot());
    return fleetSnapshot(each);
}

} // namespace bp::sim
