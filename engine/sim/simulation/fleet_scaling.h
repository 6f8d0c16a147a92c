// A fleet whose size changes during a simulation: what the
// simulator tells an autoscaler at each decision and what it asks of it.
// The policies themselves live above, in engine/sim/fleet/autoscaler.h;
// the simulator only turns a decision into replicas on the virtual clock:
//  - scaling up: a new replica is asked for at the decision and serves
//    (the router sends it requests) only `coldStart` later — weights load
//    and warm-up;
//  - scaling down: a replica still starting is cancelled first (the newest
//    first); then a serving one drains: the router sends it nothing more,
//    it finishes what it holds, and is gone when it holds nothing. The
//    last serving replica is never drained;
//  - billing: a replica costs from the decision that asked for it until it
//    is gone (cold start and drain included): SimOutcome::replicaSeconds.
// Qt-free; plain data and callbacks.
#pragma once

#include "engine/core/clock.h"

#include <functional>

namespace bp {

// What a policy observes at a decision: the fleet's replicas and its load,
// totals over the replicas that serve (ready) unless said otherwise.
struct FleetObservation {
    double atS = 0;         // the decision's time
    int ready = 0;          // replicas serving
    int starting = 0;       // replicas asked for, still loading or warming up
    double waiting = 0;     // requests queued, not running
    double running = 0;     // sequences (or requests) running
    double kvUsage = 0;     // mean KV usage of the ready replicas, 0..1
    double arrivalRate = 0; // requests/s that arrived over the last period
};

enum class ReplicaPhase { Starting, Ready, Draining, Gone };

// A replica entered `phase` at `atS` (seconds from the simulation's start).
struct ScaleEvent {
    double atS = 0;
    int replica = 0; // its slot (a gone replica's slot is reused)
    ReplicaPhase phase = ReplicaPhase::Ready;
};

struct FleetScaling {
    Duration period{std::chrono::seconds(15)}; // a decision every period, the first one period in
    Duration coldStart{};                      // asked for -> serving
    int maxReplicas = 64;                      // decisions are clamped to 1..maxReplicas
    // The replicas wanted, given what the fleet shows now. Required.
    std::function<int(const FleetObservation &)> decide;
    // Each decision (the observation, the replicas wanted after the clamp); optional.
    std::function<void(const FleetObservation &, int wanted)> onDecision;
    // Each replica's phase changes, in time order; optional.
    std::function<void(const ScaleEvent &)> onEvent;
};

} // namespace bp
