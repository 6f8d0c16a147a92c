#include "engine/sim/simulation/simulator.h"

#include "engine/core/length_rule.h"

#include "engine/sim/simulation/sim_replica.h"

#include "engine/workload/prefix_tokens.h"
#include "engine/workload/virtual_time.h"

#include <algorithm>
#include <deque>
#include <random>

namespace bp {

namespace {

// The config history's changes after the first, for SimOutcome.
struct ChangeCounter final : EngineObserver {
    std::size_t changes = 0;
    void onConfigChanged(const ConfigChange &) override { ++changes; }
};

// A request that ended without running: its id and why.
Response refusal(std::uint64_t id, Status why)
{
    Response r;
    r.requestId = id;
    r.status = std::move(why);
    return r;
}

} // namespace

struct Simulator::Impl final : VirtualDriver {
    using Replica = sim::Replica;

    struct Waiting {
        std::size_t index;
        TimePoint arrival;
    };

    sim::Shared shared;
    const SimulatorOptions &o;
    NoiseDraws &noise;
    TimePoint &now;
    SimOutcome &out;
    std::vector<std::unique_ptr<Replica>> replicas;
    std::shared_ptr<ChangeCounter> changes = std::make_shared<ChangeCounter>();
    Router router;
    std::vector<ReplicaLoad> loads;
    std::vector<std::optional<TimePoint>> completions; // per replica, this event's

    std::unique_ptr<bool[]> eligible; // per replica slot: serving, and below the router's limit
    std::size_t slots = 1;            // the most replica slots (a scaled fleet reuses gone ones)
    std::deque<Waiting> routerQueue;
    std::span<const PlannedArrival> arrivals;
    // Open-loop arrivals and the follow-ups their previous turns released
    // on the virtual clock (arrival_plan.h); set by run().
    std::optional<ArrivalPlan> plan;
    std::mt19937_64 promptRng{o.promptSeed};
    // Autoscaling (fleet_scaling.h): the next decision, arrivals since the last.
    TimePoint nextTick{};
    std::size_t arrivedInPeriod = 0;

    explicit Impl(const SimulatorOptions &options)
        : shared{options, NoiseDraws(options.costNoise, options.noiseSeed), options.start, {}, {}, false, {}},
          o(options), noise(shared.noise), now(shared.now), out(shared.out), router([&] {
              RouterOptions r = options.router;
              r.replicas = int(slotsFor(options));
              return r;
          }())
    {
        const int n = std::max(1, o.replicas);
        slots = slotsFor(o);
        if (o.scaling && (o.observer || !o.scaling->decide || o.scaling->period <= Duration::zero())) {
            out.status = Status(StatusCode::InvalidArgument,
                                o.observer ? "a scaled fleet records no session (no observer)"
                                           : "a scaled fleet needs a decision and a positive period");
            return;
        }
        for (int i = 0; i < n; ++i) {
            replicas.push_back(std::make_unique<Replica>(shared, i, o.start));
            Replica &r = *replicas.back();
            if (!r.core) { // EngineCore::create refused the config: nothing runs
                out.status = r.refused;
                replicas.clear();
                break;
            }
            r.core->addObserver(changes);
            if (!o.observer)
                continue;
            if (n == 1 && o.routerQueueLimit <= 0) // not owned: the caller keeps it alive across run()
                r.core->addObserver(std::shared_ptr<EngineObserver>(o.observer, [](EngineObserver *) {}));
            else
                r.core->addObserver(std::make_shared<sim::ReplicaTagger>(*o.observer, shared, i, n));
        }
        shared.coalesce = o.coalesceDecodeRuns && !o.observer && !o.onSample;
        loads.resize(slots);
        completions.resize(slots);
        eligible = std::make_unique<bool[]>(slots);
        out.peakReplicas = int(replicas.size());
        if (o.scaling)
            nextTick = o.start + o.scaling->period;
    }

    // Replica slots: a fixed fleet's replicas; a scaled fleet's most at
    // once — maxReplicas serving or starting, as many again draining.
    static std::size_t slotsFor(const SimulatorOptions &o)
    {
        const int n = std::max(1, o.replicas);
        if (!o.scaling)
            return std::size_t(n);
        return std::size_t(2 * std::max(n, std::max(1, o.scaling->maxReplicas)));
    }

    void setClocks()
    {
        for (auto &r : replicas)
            r->clock.set(now);
    }

    // Routes arrival `index` (it arrived at `arrival`) to a replica below
    // the router's limit; false when every replica is at it.
    bool route(std::size_t index, TimePoint arrival)
    {
        const PlannedArrival &a = arrivals[index];
        bool any = false;
        for (std::size_t k = 0; k < replicas.size(); ++k) {
            const Replica &r = *replicas[k];
            loads[k] = {r.outstanding, r.kvTokensNow()};
            eligible[k] = r.phase == ReplicaPhase::Ready &&
                          (o.routerQueueLimit <= 0 || r.outstanding < o.routerQueueLimit);
            any = any || eligible[k];
        }
        if (!any)
            return false;
        const int k = replicas.size() == 1
                          ? 0
                          : router.route(prefixKeyOf(a.blocks), std::span(loads.data(), replicas.size()),
                                         std::span<const bool>(eligible.get(), replicas.size()));
        submit(*replicas[std::size_t(k)], a, index, arrival);
        return true;
    }

    // The prompt: the trace's blocks in front (prefix_tokens.h), a
    // follow-up's context before it; without content to share (no cache,
    // blocks or conversation) only its length matters.
    std::vector<TokenId> promptOf(std::size_t index)
    {
        const PlannedArrival &a = arrivals[index];
        const bool content = o.config.cache.enabled || !a.blocks.empty() || a.conversation != 0;
        if (!content)
            return std::vector<TokenId>(std::size_t(std::max(0, a.inputTokens)));
        const int vocab = std::max(1, o.limits.vocabSize);
        return plan->prompt(index, promptTokens(a.blocks, a.blockTokens, a.inputTokens, vocab, promptRng));
    }

    void submit(Replica &rep, const PlannedArrival &a, std::size_t index, TimePoint arrival)
    {
        Request r;
        r.id = plan->idOf(index);
        r.tokens = promptOf(index);
        r.maxNewTokens = a.maxNewTokens;
        if (a.previous >= 0 && o.limits.maxSequenceLength > 0) {
            // The length rule (engine/core/length_rule.h) on the grown prompt:
            // cut from the end, so the shared prefix stays.
            const ScaledLengths len =
                clampLengths(int(r.tokens.size()), a.maxNewTokens,
                             {.maxLength = o.limits.maxSequenceLength, .generative = a.maxNewTokens > 0});
            if (len.clamped) {
                r.tokens.resize(std::size_t(len.input));
                r.maxNewTokens = len.output;
                ++out.clamped;
            }
        }
        plan->sent(index, r.tokens);
        r.conversation = a.conversation;
        r.turn = a.turn;
        r.arrival = arrival; // before now when it waited in the router's queue
        r.priority = a.priority;
        if (a.timeout)
            r.deadline = arrival + *a.timeout;
        const Duration waited = now - arrival;
        if (waited > Duration::zero()) {
            if (o.observer)
                shared.routerWaits[r.id] = waited;
            out.routerWaitTotal += waited;
            out.routerWaitMax = std::max(out.routerWaitMax, waited);
        }
        rep.clock.set(now);
        rep.cutDecodeRun(); // it joins at the next decision
        rep.dirty = true;
        ++rep.fig.routed;
        ++rep.outstanding;
        rep.fig.peakOutstanding = std::max(rep.fig.peakOutstanding, rep.outstanding);
        Replica *p = &rep;
        const Status s = rep.core->submit(std::move(r), [this, p, index, arrival](Response &&response) {
            const bool ok = response.status.isOk();
            if (o.onResponse)
                o.onResponse(index, arrival, response);
            ++(ok ? out.completed : out.failed);
            ++(ok ? p->fig.completed : p->fig.failed);
            p->fig.outputTokens += response.tokens.size();
            --p->outstanding;
            plan->ended(index, now, std::move(response.tokens));
        });
        ++(s.isOk() ? out.accepted : out.rejected);
        if (!s.isOk()) {
            if (o.onResponse)
                o.onResponse(index, arrival, refusal(plan->idOf(index), s));
            ++rep.fig.failed;
            --rep.outstanding;
            plan->ended(index, now, {});
        }
    }

    // ---- VirtualDriver: the one virtual-time loop (virtual_time.h) drives these.
    // A unit's end (its model call, or its executor free again) goes before an arrival at the same time.
    // So does a scaled fleet's decision, and a replica's cold start ending.
    std::optional<TimePoint> earlyEvent() override
    {
        std::optional<TimePoint> done;
        auto consider = [&done](TimePoint t) {
            if (!done || t < *done)
                done = t;
        };
        for (std::size_t k = 0; k < replicas.size(); ++k) {
            completions[k] = replicas[k]->nextCompletion();
            if (completions[k])
                consider(*completions[k]);
        }
        if (o.scaling) {
            if (scalingActive())
                consider(nextTick);
            for (const auto &r : replicas)
                if (r->phase == ReplicaPhase::Starting)
                    consider(r->readyAt);
        }
        return done;
    }
    // An idle executor's wake-up goes after it: the decision sees the arrival.
    std::optional<TimePoint> lateEvent() override
    {
        std::optional<TimePoint> next;
        for (const auto &r : replicas)
            if (const auto t = r->wakeUp(); t && (!next || *t < *next))
                next = t;
        return next;
    }
    void runEarly() override
    {
        for (std::size_t k = 0; k < replicas.size(); ++k)
            if (completions[k] && *completions[k] <= now)
                replicas[k]->completeDue();
        if (!o.scaling)
            return;
        for (auto &r : replicas)
            if (r->phase == ReplicaPhase::Starting && r->readyAt <= now) {
                r->phase = ReplicaPhase::Ready;
                r->dirty = true;
                scaleEvent(*r);
            }
        if (nextTick <= now && scalingActive())
            decideScale();
    }
    void arrive(std::size_t index) override
    {
        ++out.submitted;
        ++arrivedInPeriod;
        if (!routerQueue.empty() || !route(index, now)) {
            routerQueue.push_back({index, now});
            ++out.routerQueued;
        }
        if (o.onProgress && out.submitted % o.progressEvery == 0)
            o.onProgress(out);
    }
    void settle() override
    {
        drainRouterQueue();
        if (o.scaling) // a decode run ends by the next decision
            shared.runHorizon = scalingActive() ? std::optional(nextTick) : std::nullopt;
        for (auto &r : replicas) { // those with news, or due to wake up
            if (r->phase == ReplicaPhase::Gone || r->phase == ReplicaPhase::Starting)
                continue;
            if (r->dirty || (r->wakeAt && *r->wakeAt <= now))
                r->dispatchReady();
            if (r->phase == ReplicaPhase::Draining && r->outstanding == 0 && r->running.empty() &&
                !r->decodeRun)
                retire(*r); // drained
        }
    }
    bool idle() override
    {
        if (queued() == 0)
            return false;
        // Every arrival is in and no replica plans anything more: each
        // engine shuts down (Drain), partial batches may leave; one already
        // draining fails what it still holds (decide() failed what a
        // draining policy will not run; the rest could never run).
        bool drained = false;
        for (auto &r : replicas) {
            if (r->phase == ReplicaPhase::Gone || r->phase == ReplicaPhase::Starting)
                continue;
            if (r->core->queueDepth() == 0 && routerQueue.empty())
                continue;
            if (r->draining) {
                r->failHeld();
            } else {
                r->draining = true;
                drained = true;
                r->stop(ShutdownMode::Drain);
            }
        }
        if (!drained) {
            for (const Waiting &w : routerQueue) // every replica is shut down
                route(w.index, w.arrival);
            routerQueue.clear();
            return false;
        }
        for (auto &r : replicas)
            if (r->phase == ReplicaPhase::Ready || r->phase == ReplicaPhase::Draining)
                r->dispatchReady();
        return true;
    }

    // ---- Autoscaling (fleet_scaling.h).
    // Decisions go on while arrivals are left; after the last one the
    // fleet serves what it holds with the replicas it has and those still
    // starting (a request that could wait forever, as static batching's
    // without a delay, must not keep the clock ticking).
    bool scalingActive() { return plan->more(); }

    void scaleEvent(const Replica &r)
    {
        if (o.scaling->onEvent)
            o.scaling->onEvent({toSeconds(now - o.start), r.index, r.phase});
    }

    int billed() const
    {
        int n = 0;
        for (const auto &r : replicas)
            n += r->phase != ReplicaPhase::Gone;
        return n;
    }

    // A replica is gone: its time is billed, its slot free for the next one.
    void retire(Replica &r)
    {
        r.phase = ReplicaPhase::Gone;
        out.replicaSeconds += toSeconds(now - r.askedAt);
        scaleEvent(r);
    }

    // A new replica in the lowest free slot (its figures carry on the
    // slot's), starting; none when every slot is taken.
    void askReplica()
    {
        std::size_t slot = 0;
        while (slot < replicas.size() && replicas[slot]->phase != ReplicaPhase::Gone)
            ++slot;
        if (slot >= slots)
            return;
        auto r = std::make_unique<Replica>(shared, int(slot), now);
        if (!r->core)
            return; // the config was accepted for the first replicas: not reached
        r->core->addObserver(changes);
        r->phase = ReplicaPhase::Starting;
        r->readyAt = now + o.scaling->coldStart;
        if (slot < replicas.size()) {
            r->fig = replicas[slot]->fig;
            replicas[slot] = std::move(r);
        } else {
            replicas.push_back(std::move(r));
        }
        out.peakReplicas = std::max(out.peakReplicas, billed());
        scaleEvent(*replicas[slot]);
        if (o.scaling->coldStart <= Duration::zero()) {
            replicas[slot]->phase = ReplicaPhase::Ready;
            scaleEvent(*replicas[slot]);
        }
    }

    FleetObservation observe() const
    {
        FleetObservation ob;
        ob.atS = toSeconds(now - o.start);
        double kv = 0;
        for (const auto &r : replicas) {
            if (r->phase == ReplicaPhase::Starting)
                ++ob.starting;
            if (r->phase != ReplicaPhase::Ready)
                continue;
            ++ob.ready;
            MutexLock lock(r->core->mutex());
            const Scheduler &scheduler = r->core->schedulerLocked();
            if (const auto g = scheduler.gauges(now).iteration) {
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
        ob.waiting += double(routerQueue.size());
        ob.kvUsage = ob.ready > 0 ? kv / ob.ready : 0;
        ob.arrivalRate = double(arrivedInPeriod) / toSeconds(o.scaling->period);
        return ob;
    }

    void decideScale()
    {
        const FleetScaling &sc = *o.scaling;
        const FleetObservation ob = observe();
        const int want = std::clamp(sc.decide(ob), 1, std::max(1, sc.maxReplicas));
        if (sc.onDecision)
            sc.onDecision(ob, want);
        int active = ob.ready + ob.starting;
        for (; active < want; ++active)
            askReplica();
        for (; active > want; --active) {
            Replica *cancel = nullptr, *drain = nullptr;
            int ready = 0;
            for (const auto &r : replicas) {
                if (r->phase == ReplicaPhase::Starting && (!cancel || r->askedAt >= cancel->askedAt))
                    cancel = r.get(); // the newest
                if (r->phase == ReplicaPhase::Ready) {
                    ++ready;
                    if (!drain || r->outstanding <= drain->outstanding)
                        drain = r.get(); // the least loaded (ties: the highest slot)
                }
            }
            if (cancel) {
                retire(*cancel);
            } else if (drain && ready > 1) {
                drain->phase = ReplicaPhase::Draining;
                drain->dirty = true;
                scaleEvent(*drain);
            } else {
                break;
            }
        }
        arrivedInPeriod = 0;
        while (nextTick <= now) // one decision per instant, after a pause in the arrivals too
            nextTick += sc.period;
    }

    void drainRouterQueue()
    {
        while (!routerQueue.empty() && route(routerQueue.front().index, routerQueue.front().arrival))
            routerQueue.pop_front();
    }

    Snapshot snapshot() const
    {
        if (replicas.size() == 1)
            return replicas[0]->core->snapshot();
        std::vector<Snapshot> each;
        each.reserve(replicas.size());
        for (const auto &r : replicas)
            if (r->phase != ReplicaPhase::Gone && r->phase != ReplicaPhase::Starting)
                each.push_back(r->core->snapshot());
        return fleetSnapshot(each);
    }

    std::size_t queued() const
    {
        std::size_t n = routerQueue.size();
        for (const auto &r : replicas)
            if (r->phase != ReplicaPhase::Gone)
                n += r->core->queueDepth();
        return n;
    }

    void run(std::span<const PlannedArrival> all)
    {
        if (!out.status)
            return;
        arrivals = all;
        plan.emplace(all, o.start, o.limits.vocabSize);
        if (o.observer)
            o.observer->onConfigChanged({o.start, 1, "initial", "start", o.config});
        // The fleet's time: every replica's clock follows it; a sample each period on the way.
        VirtualTime time(
            o.start, o.samplePeriod,
            [this](TimePoint t) {
                now = t;
                setClocks();
            },
            o.onSample ? std::function<void()>([this] { o.onSample(snapshot()); }) : nullptr);
        out.cancelled = !runVirtualLoop(*plan, time, *this, o.cancel);
        if (out.cancelled)
            cancelRest(time);
        out.replicas.clear();
        for (auto &r : replicas) {
            MutexLock lock(r->core->mutex());
            // An iteration-level scheduler (BatchPilot's continuous or a
            // server model's) reports its preemptions in its gauges.
            if (const auto g = r->core->schedulerLocked().gauges(now).iteration)
                r->fig.preemptions = g->preemptions;
            out.preemptions += r->fig.preemptions;
            out.replicas.push_back(r->fig);
        }
        out.router = router.counters();
        for (auto &r : replicas) // still billed at the end
            if (r->phase != ReplicaPhase::Gone)
                out.replicaSeconds += toSeconds(now - r->askedAt);
        out.configChanges = changes->changes;
        setClocks();
        out.last = snapshot();
        if (o.onSample)
            o.onSample(out.last);
    }

    void cancelRest(VirtualTime &time)
    {
        for (const Waiting &w : routerQueue) { // never routed: failed at the router
            RequestRecord rec;
            rec.id = plan->idOf(w.index);
            rec.arrival = w.arrival;
            rec.inputTokens = arrivals[w.index].inputTokens;
            rec.status = StatusCode::ShuttingDown;
            rec.routerWait = now - w.arrival;
            ++out.failed;
            if (o.onResponse)
                o.onResponse(w.index, w.arrival,
                             refusal(rec.id, Status(StatusCode::ShuttingDown, "cancelled")));
            if (o.observer)
                o.observer->onRequestFailed(rec);
        }
        routerQueue.clear();
        for (auto &r : replicas) {
            r->cutDecodeRun();           // the step running now finishes, as any unit in flight
            r->stop(ShutdownMode::Fail); // queued requests fail; units in flight finish
        }
        for (;;) {
            std::optional<TimePoint> t;
            for (const auto &r : replicas)
                if (const auto d = r->nextCompletion(); d && (!t || *d < *t))
                    t = d;
            if (!t)
                break;
            time.moveTo(*t);
            for (auto &r : replicas)
                r->completeDue();
        }
        for (auto &r : replicas) // continuous: sequences running when the last step ended
            r->failHeld();
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
