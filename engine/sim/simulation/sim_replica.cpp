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
    refreshEvents();
}

int Replica::freeExecutor() const
{
    for (std::size_t i = 0; i < instances; ++i)
        if (!busy[i])
            return int(i);
    return -1;
}

void Replica::refreshEvents()
{
    m_next.reset();
    if (decodeRun)
        m_next = decodeRun->ended ? decodeRun->frees.back() : decodeRun->ends.back();
    for (const auto &r : running)
        if (!m_next || r->nextEvent() < *m_next)
            m_next = r->nextEvent();
    m_wake = wakeAt && freeExecutor() >= 0 ? wakeAt : std::nullopt;
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

bool Replica::startDecodeRun(int executor)
{
    // Steps a run may take: enough to cover the long gaps between arrivals.
    constexpr int kMostSteps = 4096;
    DecodeSteps d;
    {
        MutexLock lock(core->mutex());
        std::optional<DecodeRun> run = core->beginDecodeRunLocked(kMostSteps);
        if (!run)
            return false;
        const CostBackend::DecodeSpan span = backend->decodeSpan(run->sequences);
        const int steps = std::min(run->steps, span.steps);
        if (steps < 1) {
            core->endDecodeRunLocked({}); // none: the scheduler decides as usual
            return false;
        }
        // Each step as start() would charge it: the first one late by the
        // executor's wake-up, the next ones decided as the executor frees.
        const auto n = std::int64_t(run->sequences.size());
        d.firstStart = sim.now + lateness(executor);
        TimePoint start = d.firstStart;
        for (int i = 0; i < steps; ++i) {
            const TimePoint end = start + backend->chargeDecodes(int(n), span.context + n * i);
            const TimePoint free = end + fromSeconds(sim.o.cost.stepOverhead());
            if (i > 0 && sim.runHorizon && end > *sim.runHorizon)
                break; // a scaling decision comes first: it reads the KV of the steps ended
            d.ends.push_back(end);
            d.frees.push_back(free);
            start = free;
        }
        d.run = std::move(*run);
    }
    d.executor = executor;
    busy[std::size_t(executor)] = true;
    decodeRun = std::move(d);
    return true;
}

void Replica::endDecodeRun()
{
    DecodeSteps &d = *decodeRun;
    const auto k = int(d.ends.size());
    {
        MutexLock lock(core->mutex());
        core->endDecodeRunLocked(d.ends);
    }
    backend->advanceDecodes(d.run.sequences, k);
    for (std::size_t i = 0; i < d.ends.size(); ++i)
        fig.busyS += toSeconds(d.ends[i] - d.start(i));
    fig.peakKvTokens = std::max(fig.peakKvTokens, backend->cachedTokens());
    fig.batches += std::size_t(k);
    sim.out.batches += std::size_t(k);
    sim.out.coalescedSteps += std::size_t(k);
    sim.out.end = std::max(sim.out.end, d.ends.back());
    d.ended = true;
}

void Replica::freeDecodeRun()
{
    busy[std::size_t(decodeRun->executor)] = false;
    idleSince[std::size_t(decodeRun->executor)] = decodeRun->frees.back();
    decodeRun.reset();
}

std::size_t Replica::DecodeSteps::decidedBy(TimePoint t) const
{
    return 1 + std::size_t(std::upper_bound(frees.begin(), frees.end() - 1, t) - frees.begin());
}

void Replica::cutDecodeRun()
{
    if (!decodeRun || decodeRun->ended)
        return;
    DecodeSteps &d = *decodeRun;
    const std::size_t keep = d.decidedBy(sim.now);
    d.ends.resize(keep);
    d.frees.resize(keep);
    refreshEvents();
}

std::int64_t Replica::kvTokensNow() const
{
    std::int64_t tokens = backend->cachedTokens();
    if (decodeRun && !decodeRun->ended) // step() takes the tokens on when it is decided
        tokens += std::int64_t(decodeRun->decidedBy(sim.now) * decodeRun->run.sequences.size());
    return tokens;
}

void Replica::completeDue()
{
    dirty = true;
    const TimePoint now = sim.now;
    if (decodeRun && !decodeRun->ended && decodeRun->ends.back() <= now)
        endDecodeRun(); // its tokens, at the last model call's end
    if (decodeRun && decodeRun->ended && decodeRun->frees.back() <= now)
        freeDecodeRun();
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
    refreshEvents();
}

void Replica::dispatchReady()
{
    dirty = false;
    for (;;) {
        const int executor = freeExecutor();
        if (executor < 0) {
            wakeAt.reset(); // no leader: the next decision comes with a free executor
            refreshEvents();
            return;
        }
        clock.set(sim.now);
        if (sim.coalesce && instances == 1 && !decodeRun && running.empty() && startDecodeRun(executor))
            continue;
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
        refreshEvents();
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
