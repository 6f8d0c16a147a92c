#include "engine/sim/simulation/replica_set.h"

#include <algorithm>

namespace bp::sim {

ReplicaSet::ReplicaSet(Shared &sim) : m_sim(sim), m_o(sim.o)
{
    const SimulatorOptions &o = m_o;
    const int n = std::max(1, o.replicas);
    m_slots = slotsFor(o);
    if (o.scaling && (o.observer || !o.scaling->decide || o.scaling->period <= Duration::zero())) {
        sim.out.status = Status(StatusCode::InvalidArgument,
                                o.observer ? "a scaled fleet records no session (no observer)"
                                           : "a scaled fleet needs a decision and a positive period");
        return;
    }
    for (int i = 0; i < n; ++i) {
        m_replicas.push_back(std::make_unique<Replica>(sim, i, o.start));
        Replica &r = *m_replicas.back();
        if (!r.core) { // EngineCore::create refused the config: nothing runs
            sim.out.status = r.refused;
            m_replicas.clear();
            break;
        }
        r.core->addObserver(m_changes);
        if (!o.observer)
            continue;
        if (n == 1 && o.routerQueueLimit <= 0) // not owned: the caller keeps it alive across run()
            r.core->addObserver(std::shared_ptr<EngineObserver>(o.observer, [](EngineObserver *) {}));
        else
            r.core->addObserver(std::make_shared<ReplicaTagger>(*o.observer, sim, i, n));
    }
    m_completions.resize(m_slots);
    sim.out.peakReplicas = int(m_replicas.size());
    if (o.scaling)
        m_nextTick = o.start + o.scaling->period;
}

std::size_t ReplicaSet::slotsFor(const SimulatorOptions &o)
{
    const int n = std::max(1, o.replicas);
    if (!o.scaling)
        return std::size_t(n);
    return std::size_t(2 * std::max(n, std::max(1, o.scaling->maxReplicas)));
}

void ReplicaSet::setClocks()
{
    for (auto &r : m_replicas)
        r->clock.set(m_sim.now);
}

std::optional<TimePoint> ReplicaSet::earlyEvent(bool scalingActive)
{
    std::optional<TimePoint> done;
    auto consider = [&done](TimePoint t) {
        if (!done || t < *done)
            done = t;
    };
    for (std::size_t k = 0; k < m_replicas.size(); ++k) {
        m_completions[k] = m_replicas[k]->nextCompletion();
        if (m_completions[k])
            consider(*m_completions[k]);
    }
    if (m_o.scaling) {
        if (scalingActive)
            consider(m_nextTick);
        for (const auto &r : m_replicas)
            if (r->phase == ReplicaPhase::Starting)
                consider(r->readyAt);
    }
    return done;
}

std::optional<TimePoint> ReplicaSet::lateEvent() const
{
    std::optional<TimePoint> next;
    for (const auto &r : m_replicas)
        if (const auto t = r->wakeUp(); t && (!next || *t < *next))
            next = t;
    return next;
}

void ReplicaSet::runDue()
{
    const TimePoint now = m_sim.now;
    for (std::size_t k = 0; k < m_replicas.size(); ++k)
        if (m_completions[k] && *m_completions[k] <= now)
            m_replicas[k]->completeDue();
    if (!m_o.scaling)
        return;
    for (auto &r : m_replicas)
        if (r->phase == ReplicaPhase::Starting && r->readyAt <= now) {
            r->phase = ReplicaPhase::Ready;
            r->dirty = true;
            scaleEvent(*r);
        }
}

void ReplicaSet::settle()
{
    for (auto &r : m_replicas) { // those with news, or due to wake up
        if (r->phase == ReplicaPhase::Gone || r->phase == ReplicaPhase::Starting)
            continue;
        if (r->dirty || (r->wakeAt && *r->wakeAt <= m_sim.now))
            r->dispatchReady();
        if (r->phase == ReplicaPhase::Draining && r->outstanding == 0 && r->running.empty() && !r->decodeRun)
            retire(*r); // drained
    }
}

std::size_t ReplicaSet::queued() const
{
    std::size_t n = 0;
    for (const auto &r : m_replicas)
        if (r->phase != ReplicaPhase::Gone)
            n += r->core->queueDepth();
    return n;
}

bool ReplicaSet::drainAtEnd(bool routerWaiting)
{
    // decide() failed what a draining policy will not run; the rest could never run.
    bool drained = false;
    for (auto &r : m_replicas) {
        if (r->phase == ReplicaPhase::Gone || r->phase == ReplicaPhase::Starting)
            continue;
        if (r->core->queueDepth() == 0 && !routerWaiting)
            continue;
        if (r->draining) {
            r->failHeld();
        } else {
            r->draining = true;
            drained = true;
            r->stop(ShutdownMode::Drain);
        }
    }
    return drained;
}

void ReplicaSet::dispatchServing()
{
    for (auto &r : m_replicas)
        if (r->phase == ReplicaPhase::Ready || r->phase == ReplicaPhase::Draining)
            r->dispatchReady();
}

void ReplicaSet::cancel(VirtualTime &time)
{
    for (auto &r : m_replicas) {
        r->cutDecodeRun();           // the step running now finishes, as any unit in flight
        r->stop(ShutdownMode::Fail); // queued requests fail; units in flight finish
    }
    for (;;) {
        std::optional<TimePoint> t;
        for (const auto &r : m_replicas)
            if (const auto d = r->nextCompletion(); d && (!t || *d < *t))
                t = d;
        if (!t)
            break;
        time.moveTo(*t);
        for (auto &r : m_replicas)
            r->completeDue();
    }
    for (auto &r : m_replicas) // continuous: sequences running when the last step ended
        r->failHeld();
}

void ReplicaSet::scaleEvent(const Replica &r)
{
    if (m_o.scaling->onEvent)
        m_o.scaling->onEvent({toSeconds(m_sim.now - m_o.start), r.index, r.phase});
}

int ReplicaSet::billed() const
{
    int n = 0;
    for (const auto &r : m_replicas)
        n += r->phase != ReplicaPhase::Gone;
    return n;
}

void ReplicaSet::retire(Replica &r)
{
    r.phase = ReplicaPhase::Gone;
    m_sim.out.replicaSeconds += toSeconds(m_sim.now - r.askedAt);
    scaleEvent(r);
}

void ReplicaSet::askReplica()
{
    std::size_t slot = 0;
    while (slot < m_replicas.size() && m_replicas[slot]->phase != ReplicaPhase::Gone)
        ++slot;
    if (slot >= m_slots)
        return;
    auto r = std::make_unique<Replica>(m_sim, int(slot), m_sim.now);
    if (!r->core)
        return; // the config was accepted for the first replicas: not reached
    r->core->addObserver(m_changes);
    r->phase = ReplicaPhase::Starting;
    r->readyAt = m_sim.now + m_o.scaling->coldStart;
    if (slot < m_replicas.size()) {
        r->fig = m_replicas[slot]->fig;
        m_replicas[slot] = std::move(r);
    } else {
        m_replicas.push_back(std::move(r));
    }
    m_sim.out.peakReplicas = std::max(m_sim.out.peakReplicas, billed());
    scaleEvent(*m_replicas[slot]);
    if (m_o.scaling->coldStart <= Duration::zero()) {
        m_replicas[slot]->phase = ReplicaPhase::Ready;
        scaleEvent(*m_replicas[slot]);
    }
}

void ReplicaSet::decideScale(const FleetObservation &observed)
{
    const FleetScaling &sc = *m_o.scaling;
    const int want = std::clamp(sc.decide(observed), 1, std::max(1, sc.maxReplicas));
    if (sc.onDecision)
        sc.onDecision(observed, want);
    int active = observed.ready + observed.starting;
    for (; active < want; ++active)
        askReplica();
    for (; active > want; --active) {
        Replica *cancel = nullptr, *drain = nullptr;
        int ready = 0;
        for (const auto &r : m_replicas) {
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
    m_arrivedInPeriod = 0;
    while (m_nextTick <= m_sim.now) // one decision per instant, after a pause in the arrivals too
        m_nextTick += sc.period;
}

void ReplicaSet::finish()
{
    SimOutcome &out = m_sim.out;
    out.replicas.clear();
    for (auto &r : m_replicas) {
        MutexLock lock(r->core->mutex());
        // An iteration-level scheduler (BatchPilot's continuous or a
        // server model's) reports its preemptions in its gauges.
        if (const auto g = r->core->schedulerLocked().gauges(m_sim.now).iteration)
            r->fig.preemptions = g->preemptions;
        out.preemptions += r->fig.preemptions;
        out.replicas.push_back(r->fig);
    }
    for (auto &r : m_replicas) // still billed at the end
        if (r->phase != ReplicaPhase::Gone)
            out.replicaSeconds += toSeconds(m_sim.now - r->askedAt);
    out.configChanges = m_changes->changes;
}

} // namespace bp::sim
