// The executor step (engine_core.h): decide, run on the backend, hand back,
// record and complete. The engine's threads and the simulator both turn it;
// nothing here knows which clock or which backend it is given.
#include "engine_core.h"

#include "engine/core/nvtx.h"
#include "engine/sched/outcome.h"

#include <string>
#include <utility>

namespace bp {

EngineCore::Decision EngineCore::decide()
{
    Decision d;
    for (;;) {
        const TimePoint now = m_clock.now();
        ConfigChange change;
        if (applyProposalsLocked(now, change)) {
            m_mutex.unlock();
            if (change.version)
                notifyConfigChanged(change);
            m_mutex.lock();
            continue;
        }
        std::optional<nvtx::Range> range(std::in_place, nvtx::Category::Engine, "schedule");
        Scheduler::Poll poll = m_scheduler->poll(now, m_draining, true);
        range.reset();
        const bool failed = !poll.expired.empty() || !poll.failed.empty();
        if (failed) {
            // A poll can both expire requests and dispatch a unit. The
            // config is read here, under the lock: an update may replace it
            // as soon as the lock is released.
            const std::shared_ptr<const BatchingConfig> config = m_config.current();
            d.expired += poll.expired.size();
            m_mutex.unlock();
            failWith(poll.expired, StatusCode::DeadlineExceeded, "deadline passed while queued", *config);
            failEach(poll.failed, *config);
            m_mutex.lock();
        }
        if (poll.unit) {
            ++m_inFlight;
            d.unit = std::move(poll.unit);
            return d;
        }
        if (failed)
            continue;
        if (m_stopping && !poll.wakeAt && !poll.busy && m_scheduler->size() > 0) {
            // Draining and the policy still will not dispatch (static without
            // flush-on-drain): fail the rest.
            std::vector<Pending> rest = m_scheduler->takeAll();
            const std::shared_ptr<const BatchingConfig> config = m_config.current();
            m_mutex.unlock();
            failShutDown(rest, *config);
            m_mutex.lock();
            continue;
        }
        d.wakeAt = poll.wakeAt;
        d.busy = poll.busy;
        return d;
    }
}

std::optional<DecodeRun> EngineCore::beginDecodeRunLocked(int maxSteps)
{
    const std::shared_ptr<const BatchingConfig> config = m_config.current();
    if (m_stopping || config->cache.enabled || config->slo.enabled)
        return std::nullopt; // an interceptor may answer or propose between steps
    auto *runs = dynamic_cast<DecodeRunSource *>(m_scheduler.get());
    if (!runs)
        return std::nullopt; // a policy that cannot say its steps ahead
    std::optional<DecodeRun> run = runs->beginDecodeRun(maxSteps);
    if (run)
        ++m_inFlight;
    return run;
}

void EngineCore::endDecodeRunLocked(std::span<const TimePoint> ends)
{
    if (auto *runs = dynamic_cast<DecodeRunSource *>(m_scheduler.get()))
        runs->endDecodeRun(ends);
    --m_inFlight;
}

UnitRun EngineCore::run(WorkUnit &unit, int executor)
{
    UnitRun run;
    run.executor = executor;
    if (StepWork *step = unit.step()) {
        const nvtx::Range range(nvtx::Category::Engine, [&] {
            return "step " + std::to_string(step->id) + " n=" + std::to_string(step->items.size()) +
                   " prefill=" + std::to_string(step->prefillTokens) +
                   " decode=" + std::to_string(step->decodeTokens);
        });
        run.outcomes.resize(step->items.size());
        run.start = m_clock.now();
        run.guard.status = MemoryGuard::runStep(*m_backend->steps(), step->items, run.outcomes);
        run.end = m_clock.now();
        return run;
    }
    Batch &batch = *unit.batch();
    const std::size_t n = batch.items.size();
    const nvtx::Range range(nvtx::Category::Engine, [&] {
        return "batch " + std::to_string(batch.id) + " " + std::string(policyName(batch.policy)) +
               " n=" + std::to_string(n) + " L=" + std::to_string(batch.paddedLength) +
               " bucket=" + std::to_string(batch.bucket) + " " +
               std::string(dispatchReasonName(batch.reason));
    });
    BatchInput input;
    input.paddedLength = batch.paddedLength;
    input.requests.reserve(n);
    for (const Pending &p : batch.items)
        input.requests.push_back(&p.request);
    run.results.resize(n);
    run.start = m_clock.now();
    run.guard = m_guard.runGuarded(input, run.results);
    run.end = m_clock.now();
    if (const auto lowering = MemoryGuard::loweredLimit(run.guard, int(n)))
        lowerMemoryLimit(*lowering);
    return run;
}

void EngineCore::finish(WorkUnit &unit, UnitRun &run)
{
    UnitDone done;
    bool wake = false;
    {
        // A step's token events are emitted in here, in order, before any
        // completion.
        MutexLock lock(m_mutex);
        if (m_scheduler->finished(unit, run, run.end, done))
            wake = m_driver.pokeLocked();
        --m_inFlight;
    }
    if (wake)
        m_driver.wake();
    deliver(done, run.end);
}

void EngineCore::deliver(UnitDone &done, TimePoint at)
{
    const std::size_t n = done.done.size();
    std::vector<RequestRecord> records;
    records.reserve(n);
    for (std::size_t i = 0; i < n; ++i)
        records.push_back(completedRecord(done.done[i].request, done.responses[i], done.record.id));
    m_metrics.recordBatch(done.record, records, at);
    for (std::size_t i = 0; i < n; ++i)
        for (Interceptor *interceptor : m_interceptors)
            interceptor->observe(done.done[i].request, done.responses[i], records[i]);
    notifyEach(*m_observers.current(), "onBatchCompleted",
               [&](EngineObserver &o) { o.onBatchCompleted(done.record, records); });
    for (std::size_t i = 0; i < n; ++i)
        complete(done.done[i].done, std::move(done.responses[i]));
}

} // namespace bp
