// Engine: the executor threads around the EngineCore. One idle executor
// leads (drives the core's decide()); the one whose decision hands out a
// unit of work runs it (run(), finish()); see engine.h for the
// leader/followers scheme and its reasons.
#include "engine.h"

#include <algorithm>
#include <utility>

namespace bp {

Result<std::unique_ptr<Engine>> Engine::create(EngineOptions options)
{
    std::unique_ptr<Engine> engine(new Engine(options));
    auto core = EngineCore::create(std::move(options.batching), std::move(options.backend),
                                   options.clock ? *options.clock : RealClock::instance(), *engine,
                                   options.probeMemory);
    if (!core)
        return core.status();
    engine->m_core = std::move(*core);
    {
        MutexLock lock(engine->m_core->mutex());
        engine->m_targetInstances = engine->m_core->instancesLocked();
        if (!engine->m_manual)
            engine->resizeExecutors();
    }
    return engine;
}

Engine::Engine(const EngineOptions &options)
    : m_manual(options.manualScheduling), m_spin(options.manualScheduling ? Duration::zero() : options.spin)
{
}

Engine::~Engine()
{
    if (m_core) // else create() failed before the core was assembled
        shutdown(ShutdownMode::Drain);
}

// The driver's hooks run under the core's lock, which the analysis cannot
// tie to an override's caller (ExecutorDriver knows no mutex): hence no
// analysis in these two; EngineCore calls them only with its lock held.
bool Engine::pokeLocked() NO_THREAD_SAFETY_ANALYSIS
{
    m_pokes.fetch_add(1, std::memory_order_release);
    return m_leaderSleeping;
}

void Engine::instancesChangedLocked(int instances) NO_THREAD_SAFETY_ANALYSIS
{
    m_targetInstances = instances;
    resizeExecutors();
}

bool Engine::schedulerIdle() const
{
    MutexLock lock(m_core->mutex());
    return m_leaderIdle;
}

void Engine::resizeExecutors()
{
    const auto target = std::size_t(m_targetInstances);
    if (m_executors.size() < target) {
        m_executors.resize(target);
        m_executorRunning.resize(target, false);
    }
    for (std::size_t i = 0; i < target; ++i) {
        if (m_executorRunning[i])
            continue;
        if (m_executors[i].joinable())
            m_executors[i].join(); // exited after an earlier shrink; returns at once
        m_executorRunning[i] = true;
        m_executors[i] = std::thread([this, i] { executorLoop(int(i)); });
    }
    // executors at index >= target notice on their next wake-up and exit
    m_leaderCv.notify_all();
    m_followerCv.notify_all();
}

Engine::Step Engine::runSchedulerOnce()
{
    Step step;
    std::optional<WorkUnit> unit;
    {
        MutexLock lock(m_core->mutex());
        EngineCore::Decision d = m_core->decide();
        step.expired = d.expired;
        step.wakeAt = d.wakeAt;
        step.dispatched = d.unit.has_value();
        unit = std::move(d.unit);
    }
    if (unit) {
        UnitRun run = m_core->run(*unit, 0);
        m_core->finish(*unit, run);
    }
    return step;
}

bool Engine::mustExit(int index) const
{
    return index >= m_targetInstances || m_core->stoppedLocked();
}

std::optional<WorkUnit> Engine::lead(int index)
{
    useFineTimerSlack();   // the default 50 µs would stretch every queue delay
    bool spunIdle = false; // the last spin ended with nothing new: sleep next
    for (;;) {
        if (mustExit(index))
            return std::nullopt;
        EngineCore::Decision d = m_core->decide();
        if (d.unit)
            return std::move(d.unit);
        if (mustExit(index))
            return std::nullopt;
        const TimePoint now = m_core->clock().now();
        const std::optional<TimePoint> wakeAt = d.wakeAt;
        if (m_spin > Duration::zero() && !spunIdle && (!wakeAt || *wakeAt - now <= m_spin)) {
            // Busy-wait for the dispatch time or for news, whichever is first.
            const TimePoint until = wakeAt ? *wakeAt : now + m_spin;
            const std::uint64_t pokes = m_pokes.load(std::memory_order_acquire);
            m_core->mutex().unlock();
            const bool news = spinUntil(until, m_pokes, pokes);
            m_core->mutex().lock();
            spunIdle = !news && !wakeAt;
            continue;
        }
        spunIdle = false;
        m_leaderSleeping = true;
        if (wakeAt) {
            m_leaderCv.wait_until(m_core->mutex(), *wakeAt - m_spin); // with spin > 0: spin the rest
        } else {
            m_leaderIdle = true;
            m_leaderCv.wait(m_core->mutex());
            m_leaderIdle = false;
        }
        m_leaderSleeping = false;
    }
}

void Engine::executorLoop(int index)
{
    MutexLock lock(m_core->mutex());
    for (;;) {
        if (mustExit(index))
            break;
        if (m_hasLeader) {
            m_followerCv.wait(lock,
                              [&]() NO_THREAD_SAFETY_ANALYSIS { return !m_hasLeader || mustExit(index); });
            continue;
        }
        m_hasLeader = true;
        std::optional<WorkUnit> unit = lead(index);
        m_hasLeader = false;
        m_followerCv.notify_one(); // the next idle executor takes over scheduling
        if (!unit)
            break;
        lock.unlock();
        UnitRun run = m_core->run(*unit, index);
        m_core->finish(*unit, run);
        lock.lock();
    }
    m_executorRunning[std::size_t(index)] = false;
    m_followerCv.notify_all();
}

void Engine::shutdown(ShutdownMode mode)
{
    std::lock_guard shutdownLock(m_shutdownMutex);
    if (m_shutDown)
        return;
    std::vector<std::thread> executors;
    m_core->shutdown(mode);
    if (m_manual) {
        // No threads: drain on this one; what no policy will run fails.
        while (queueDepth() > 0)
            if (!runSchedulerOnce().dispatched && queueDepth() > 0)
                m_core->failHeld();
    }
    {
        MutexLock lock(m_core->mutex());
        executors = std::move(m_executors);
    }
    m_leaderCv.notify_all();
    m_followerCv.notify_all();
    for (auto &t : executors)
        if (t.joinable())
            t.join();
    m_shutDown = true;
}

} // namespace bp
