#include "engine/sim/simulation/sim_replica.h"

#include <algorithm>

namespace bp::sim {

std::uint64_t ReplicaTagger::global(std::uint64_t local) const
{
    return local ? (local - 1) * std::uint64_t(replicas) + std::uint64_t(replica) + 1 : 0;
}

RequestRecord ReplicaTagger::tag(const RequestRecord &r) const
{
    RequestRecord t = r;
    t.replica = replica;
    t.batchId = global(r.batchId);
    if (const auto it = shared.routerWaits.find(r.id); it != shared.routerWaits.end())
        t.routerWait = it->second;
    return t;
}

void ReplicaTagger::onBatchCompleted(const BatchRecord &b, std::span<const RequestRecord> rs)
{
    BatchRecord t = b;
    t.replica = replica;
    t.id = global(b.id);
    copy.clear();
    for (const RequestRecord &r : rs)
        copy.push_back(tag(r));
    to.onBatchCompleted(t, copy);
}

void ReplicaTagger::onConfigChanged(const ConfigChange &c)
{
    if (replica == 0)
        to.onConfigChanged(c);
}

Replica::Replica(Shared &s, int i, TimePoint at)
    : sim(s), index(i), clock(at),
      backend(std::make_shared<CostBackend>(s.o.cost, clock, s.noise, s.o.limits, s.o.output, s.o.positions)),
      busy(std::size_t(std::max(1, s.o.config.instances)), false), idleSince(busy.size(), TimePoint::min()),
      instances(busy.size()), askedAt(at), readyAt(at)
{
    fig.replica = i;
    if (auto c = EngineCore::create(s.o.config, backend, clock, *this))
        core = std::move(*c);
    else
        refused = c.status();
}

void Replica::instancesChangedLocked(int n)
{
    // Executors past the new count finish what they run and are not used again.
    const auto k = std::size_t(std::max(1, n));
    if (k > busy.size()) {
        busy.resize(k, false);
        idleSince.resize(k, TimePoint::min());
    }
    instances = k;
}

int Replica::freeExecutor() const
{
    for (std::size_t i = 0; i < instances; ++i)
        if (!busy[i])
            return int(i);
    return -1;
}

std::optional<TimePoint> Replica::nextCompletion() const
{
    std::optional<TimePoint> t;
    for (const auto &r : running)
        if (!t || r->nextEvent() < *t)
            t = r->nextEvent();
    return t;
}

Duration Replica::lateness(int executor)
{
    const SimulatorOptions &o = sim.o;
    if (o.cost.dispatchLateness.empty() || idleSince[std::size_t(executor)] >= sim.now)
        return Duration::zero();
    switch (o.costNoise) {
    case CostNoise::None: return fromSeconds(o.cost.latenessAt(0.5));
    case CostNoise::Mean: return fromSeconds(o.cost.meanLateness());
    case CostNoise::Drawn: return fromSeconds(o.cost.latenessAt(sim.noise.uniform()));
    }
    return Duration::zero();
}

void Replica::start(WorkUnit &&unit, int executor)
{
    const TimePoint now = sim.now;
    const Duration late = lateness(executor);
    unit.delayDispatch(late); // the engine's clock reads the late dispatch
    backend->setConcurrentUnits(1 + int(std::count(busy.begin(), busy.end(), true)));
    clock.set(now + late);
    UnitRun run = core->run(unit, executor);
    clock.set(now);
    const bool step = unit.isStep();
    auto r = std::make_unique<Running>(Running{std::move(unit), std::move(run)});
    r->free = r->run.end + fromSeconds(step ? sim.o.cost.stepOverhead() : sim.o.cost.overheadS);
    fig.busyS += toSeconds(r->run.end - r->run.start);
    fig.peakKvTokens = std::max(fig.peakKvTokens, backend->cachedTokens());
    busy[std::size_t(executor)] = true;
    running.push_back(std::move(r));
    ++fig.batches;
    ++sim.out.batches;
}

void Replica::completeDue()
{
    dirty = true;
    const TimePoint now = sim.now;
    // In event order (ties by executor), as the executors would finish.
    std::sort(running.begin(), running.end(), [](const auto &a, const auto &b) {
        return a->nextEvent() != b->nextEvent() ? a->nextEvent() < b->nextEvent()
                                                : a->run.executor < b->run.executor;
    });
    for (const auto &p : running) {
        Running &r = *p;
        if (r.nextEvent() > now)
            break;
        if (!r.finished) {
            clock.set(r.run.end);
            core->finish(r.unit, r.run);
            r.finished = true;
            sim.out.end = std::max(sim.out.end, r.unit.isStep() ? r.run.end : r.free);
        }
        if (r.free <= now) {
            busy[std::size_t(r.run.executor)] = false;
            idleSince[std::size_t(r.run.executor)] = r.free;
        }
    }
    std::erase_if(running, [&](const auto &r) { return r->finished && r->free <= now; });
    clock.set(now);
}

void Replica::dispatchReady()
{
    dirty = false;
    for (;;) {
        const int executor = freeExecutor();
        if (executor < 0) {
            wakeAt.reset(); // no leader: the next decision comes with a free executor
            return;
        }
        clock.set(sim.now);
        EngineCore::Decision d;
        {
            MutexLock lock(core->mutex());
            d = core->decide();
        }
        if (d.unit) {
            start(std::move(*d.unit), executor);
            continue;
        }
        wakeAt = d.wakeAt;
        if (wakeAt && *wakeAt <= sim.now)
            wakeAt = sim.now + Duration(1); // never the same instant again
        return;
    }
}

void Replica::stop(ShutdownMode mode)
{
    dirty = true;
    core->shutdown(mode);
}

void Replica::failHeld()
{
    dirty = true;
    core->failHeld();
}

} // namespace bp::sim
