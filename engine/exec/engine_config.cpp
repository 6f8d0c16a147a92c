// EngineCore: the config path. Every writer — an operator (GUI, REST, CLI),
// the SLO controller, the memory guard — goes through applyLocked(): one
// validation, one stamp in the history, one hand-over to the scheduler.
#include "engine_core.h"

#include <cstdio>
#include <utility>

namespace bp {

Status EngineCore::applyLocked(const ConfigPatch &patch, std::string origin, const std::string &why,
                               ConfigChange &change)
{
    // `before` keeps the previous config alive past the swap.
    const std::shared_ptr<const BatchingConfig> before = m_config.current();
    // The patch is applied here, once: the checks below and the commit judge the same config.
    BatchingConfig next = patch.appliedTo(*before);
    const bool switchKind = !sameSchedulerKind(*before, next);
    if (switchKind || next.policy == PolicyKind::Continuous)
        if (Status s = schedulerSupports(next, m_backend->steps(), m_backend->info().name); !s)
            return s;
    if (switchKind) {
        if (m_scheduler->hasWorkInFlight())
            return {StatusCode::Unavailable,
                    "a generation step is running; switch the policy again in a moment"};
    }
    // The one gate for every writer, controllers included.
    if (Status s = m_config.commit(std::move(next), std::move(origin), why, m_clock.now(), change); !s)
        return s;
    if (change.version == 0)
        return Status::ok();
    const BatchingConfig &config = *m_config.current();
    if (switchKind) {
        // Another kind of scheduler: move the queue over in admission order.
        // Unit ids go on from the engine's sequence.
        std::unique_ptr<Scheduler> fresh =
            makeScheduler(config, m_backend->info().limits(), m_backend->steps(), m_unitIds);
        fresh->reconfigure(config, m_config.version());
        const TimePoint now = m_clock.now();
        for (Pending &p : m_scheduler->takeAll())
            if (Status s = fresh->admit(p, now); !s)
                m_refused.push_back({std::move(p), std::move(s)});
        m_scheduler = std::move(fresh);
    } else {
        m_scheduler->reconfigure(config, m_config.version());
    }
    if (before->queueCount() != config.queueCount() || before->policy != config.policy ||
        before->bucketEdges != config.bucketEdges || before->hybrid != config.hybrid)
        m_metrics.resetQueues();
    if (before->goodput != config.goodput)
        m_metrics.setGoodputSlo(config.goodput);
    for (Interceptor *interceptor : m_interceptors)
        interceptor->configured(*before, config);
    if (config.instances != before->instances)
        m_driver.instancesChangedLocked(config.instances);
    m_driver.pokeLocked(); // woken by notifyConfigChanged() after the lock
    return Status::ok();
}

void EngineCore::applyControllerLocked(const ConfigPatch &patch, std::string origin, const std::string &why,
                                       ConfigChange &change)
{
    if (Status s = applyLocked(patch, origin, why, change); !s) {
        // Validated like an operator's change, and refused the same way. A
        // controller has no caller to tell: say it once in a while.
        static std::atomic<int> reported{0};
        if (reported.fetch_add(1, std::memory_order_relaxed) < 10)
            std::fprintf(stderr, "batchpilot: %s change refused: %s\n", origin.c_str(), s.message().c_str());
    }
}

bool EngineCore::applyProposalsLocked(TimePoint now, ConfigChange &change)
{
    bool proposed = false;
    for (Interceptor *interceptor : m_interceptors) {
        if (auto proposal = interceptor->propose(*m_config.current(), now)) {
            proposed = true;
            applyControllerLocked(proposal->patch, std::move(proposal->origin), proposal->why, change);
            if (change.version)
                break; // one change per decision: notify it before the next
        }
    }
    return proposed;
}

void EngineCore::notifyConfigChanged(const ConfigChange &change)
{
    m_driver.wake();
    notifyEach(*m_observers.current(), "onConfigChanged",
               [&](EngineObserver &o) { o.onConfigChanged(change); });
}

Result<ConfigUpdate> EngineCore::update(const ConfigPatch &patch, std::string origin)
{
    ConfigUpdate result;
    ConfigChange change;
    std::vector<Scheduler::Failure> refused;
    {
        MutexLock lock(m_mutex);
        if (m_stopping)
            return Status(StatusCode::ShuttingDown, "engine is shutting down");
        result.before = *m_config.current();
        if (Status s = applyLocked(patch, std::move(origin), {}, change); !s)
            return s;
        result.after = *m_config.current();
        result.version = change.version;
        refused = std::exchange(m_refused, {});
    }
    failEach(refused, result.after);
    if (change.version)
        notifyConfigChanged(change);
    return result;
}

void EngineCore::lowerMemoryLimit(const MemoryGuard::Lowering &lowering)
{
    ConfigChange change;
    {
        // Read and applied in one critical section, and only ever lowering:
        // a limit set meanwhile by anyone (a lower one included) stays.
        MutexLock lock(m_mutex);
        if (m_stopping)
            return;
        applyControllerLocked(ConfigPatch::lowerMemoryBatchLimit(lowering.limit),
                              std::string(kMemoryGuardOrigin), lowering.why, change);
    }
    if (change.version)
        notifyConfigChanged(change);
}

} // namespace bp
