// What the simulator reads off its replicas (simulator.h; internal to
// engine/sim/): the fleet as an autoscaling decision sees it
// (FleetObservation, fleet_scaling.h) and the engine snapshot a metric
// sample takes (one replica's own, or fleetSnapshot() of those serving).
#pragma once

#include "engine/sim/simulation/replica_set.h"

namespace bp::sim {

// At a scaling decision: the ready and starting replicas, what the ready
// ones hold (their schedulers' waiting and running sequences, or queued
// requests and those in batches) and their mean KV usage, the requests
// waiting at the router (`routerWaiting`), the arrival rate over the period.
FleetObservation observeFleet(const ReplicaSet &replicas, std::size_t routerWaiting, const Shared &sim);

// The engine's snapshot: a single replica's, else the fleet's over those
// neither starting nor gone.
Snapshot snapshotOf(const ReplicaSet &replicas);

} // namespace bp::sim
