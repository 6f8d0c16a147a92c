#include "engine/sim/simulation/simulator.h"

#include "engine/sim/simulation/replica_set.h"
#include "engine/sim/simulation/sim_observation.h"
#include "engine/sim/simulation/sim_routing.h"

#include "engine/workload/virtual_time.h"

namespace bp {

// The event loop's driver (virtual_time.h): the fleet's front (the router
// and its queue, sim_routing.h), its replicas (replica_set.h) and what a
// decision or a sample reads of them (sim_observation.h), on one clock.
struct Simulator::Impl final : VirtualDriver {
    sim::Shared shared;
    const SimulatorOptions &o;
    // Open-loop arrivals and the follow-ups their previous turns released
    // on the virtual clock (arrival_plan.h); set by run(). Before the
    // replicas: their completions release turns into it.
    std::optional<ArrivalPlan> plan;
    sim::Routing routing;
    sim::ReplicaSet replicas;

    explicit Impl(const SimulatorOptions &options)
        : shared{options, NoiseDraws(options.costNoise, options.noiseSeed), options.start, {}, {}, false, {}},
          o(options), routing(shared), replicas(shared)
    {
        shared.coalesce = o.coalesceDecodeRuns && !o.observer && !o.onSample;
    }

    // ---- VirtualDriver: the one virtual-time loop (virtual_time.h) drives these.
    // A unit's end (its model call, or its executor free again) goes before an arrival at the same time.
    // So does a scaled fleet's decision, and a replica's cold start ending.
    std::optional<TimePoint> earlyEvent() override
    {
        return replicas.earlyEvent(o.scaling && scalingActive());
    }
    // An idle executor's wake-up goes after it: the decision sees the arrival.
    std::optional<TimePoint> lateEvent() override { return replicas.lateEvent(); }
    void runEarly() override
    {
        replicas.runDue();
        if (o.scaling && replicas.nextTick() <= shared.now && scalingActive())
            replicas.decideScale(sim::observeFleet(replicas, routing.waiting(), shared));
    }
    void arrive(std::size_t index) override
    {
        ++shared.out.submitted;
        replicas.countArrival();
        routing.arrive(index, replicas);
        if (o.onProgress && shared.out.submitted % o.progressEvery == 0)
            o.onProgress(shared.out);
    }
    void settle() override
    {
        routing.drain(replicas);
        if (o.scaling) // a decode run ends by the next decision
            shared.runHorizon = scalingActive() ? std::optional(replicas.nextTick()) : std::nullopt;
        replicas.settle();
    }
    bool idle() override
    {
        if (routing.waiting() + replicas.queued() == 0)
            return false;
        // Every arrival is in and no replica plans anything more: each
        // engine shuts down (Drain), partial batches may leave; one already
        // draining fails what it still holds.
        if (!replicas.drainAtEnd(routing.waiting() > 0)) {
            routing.routeRest(replicas); // every replica is shut down
            return false;
        }
        replicas.dispatchServing();
        return true;
    }

    // Autoscaling decisions go on while arrivals are left; after the last
    // one the fleet serves what it holds with the replicas it has and those
    // still starting (a request that could wait forever, as static
    // batching's without a delay, must not keep the clock ticking).
    bool scalingActive() { return plan->more(); }

    void run(std::span<const PlannedArrival> all)
    {
        if (!shared.out.status)
            return;
        plan.emplace(all, o.start, o.limits.vocabSize);
        routing.start(all, *plan);
        if (o.observer)
            o.observer->onConfigChanged({o.start, 1, "initial", "start", o.config});
        // The fleet's time: every replica's clock follows it; a sample each period on the way.
        VirtualTime time(
            o.start, o.samplePeriod,
            [this](TimePoint t) {
                shared.now = t;
                replicas.setClocks();
            },
            o.onSample ? std::function<void()>([this] { o.onSample(sim::snapshotOf(replicas)); }) : nullptr);
        SimOutcome &out = shared.out;
        out.cancelled = !runVirtualLoop(*plan, time, *this, o.cancel);
        if (out.cancelled) {
            routing.failWaiting(); // never routed: failed at the router
            replicas.cancel(time);
        }
        replicas.finish();
        out.router = routing.counters();
        replicas.setClocks();
        out.last = sim::snapshotOf(replicas);
        if (o.onSample)
            o.onSample(out.last);
    }
};

Simulator::Simulator(SimulatorOptions options) : m_options(std::move(options)) {}

SimOutcome Simulator::run(std::span<const PlannedArrival> arrivals)
{
    Impl impl(m_options);
    impl.run(arrivals);
    return std::move(impl.shared.out);
}

} // namespace bp
