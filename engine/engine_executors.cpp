// Engine: the executor threads. One idle executor leads (drives the
// Scheduler), the one whose poll hands out a unit of work runs it; see
// engine.h for the leader/followers scheme and its reasons.
#include "engine.h"

#include "nvtx.h"
#include "outcome.h"
#include "spin_wait.h"

#include <utility>

namespace bp {

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
    Scheduler::Poll poll;
    ConfigChange change;
    std::shared_ptr<const BatchingConfig> config;
    {
        std::lock_guard lock(m_mutex);
        applyProposalsLocked(m_clock->now(), change);
        const nvtx::Range range(nvtx::Category::Engine, "schedule");
        poll = m_scheduler->poll(m_clock->now(), m_draining, true);
        step.expired = poll.expired.size();
        step.wakeAt = poll.wakeAt;
        step.dispatched = poll.batch.has_value() || poll.step;
        config = m_config.current();
    }
    if (change.version)
        notifyConfigChanged(change);
    fail(poll.expired, StatusCode::DeadlineExceeded, "deadline passed while queued", *config);
    failEach(poll.failed, *config);
    if (step.dispatched) {
        Work work{std::move(poll.batch), std::move(poll.step)};
        run(work, 0);
    }
    return step;
}

bool Engine::mustExit(int index) const
{
    return index >= m_targetInstances || (m_stopping && m_scheduler->size() == 0);
}

std::optional<Engine::Work> Engine::lead(std::unique_lock<std::mutex> &lock, int index)
{
    useFineTimerSlack();   // the default 50 µs would stretch every queue delay
    bool spunIdle = false; // the last spin ended with nothing new: sleep next
    for (;;) {
        if (mustExit(index))
            return std::nullopt;
        const TimePoint now = m_clock->now();
        ConfigChange change;
        if (applyProposalsLocked(now, change)) {
            lock.unlock();
            if (change.version)
                notifyConfigChanged(change);
            lock.lock();
            continue;
        }
        Scheduler::Poll poll = [&] {
            const nvtx::Range range(nvtx::Category::Engine, "schedule");
            return m_scheduler->poll(now, m_draining, true);
        }();
        const bool failed = !poll.expired.empty() || !poll.failed.empty();
        if (failed) {
            // A poll can both expire requests and dispatch a batch. The
            // config is read here, under the lock: reconfigure may replace it
            // as soon as the lock is released.
            const std::shared_ptr<const BatchingConfig> config = m_config.current();
            lock.unlock();
            fail(poll.expired, StatusCode::DeadlineExceeded, "deadline passed while queued", *config);
            failEach(poll.failed, *config);
            lock.lock();
        }
        if (poll.batch || poll.step)
            return Work{std::move(poll.batch), std::move(poll.step)};
        if (failed)
            continue;
        const std::optional<TimePoint> wakeAt = poll.wakeAt;
        if (m_stopping && !wakeAt && !poll.busy && m_scheduler->size() > 0) {
            // Draining and the policy still will not dispatch (static without
            // flush-on-drain): fail the rest.
            std::vector<Pending> rest = m_scheduler->takeAll();
            const std::shared_ptr<const BatchingConfig> config = m_config.current();
            lock.unlock();
            fail(rest, StatusCode::ShuttingDown, "engine shut down before a full static batch formed",
                 *config);
            lock.lock();
            continue;
        }
        if (m_spin > Duration::zero() && !spunIdle && (!wakeAt || *wakeAt - now <= m_spin)) {
            // Busy-wait for the dispatch time or for news, whichever is first.
            const TimePoint until = wakeAt ? *wakeAt : now + m_spin;
            const std::uint64_t pokes = m_pokes.load(std::memory_order_acquire);
            lock.unlock();
            const bool news = spinUntil(until, m_pokes, pokes);
            lock.lock();
            spunIdle = !news && !wakeAt;
            continue;
        }
        spunIdle = false;
        m_leaderSleeping = true;
        if (wakeAt) {
            m_leaderCv.wait_until(lock, *wakeAt - m_spin); // with spin > 0: spin the rest
        } else {
            m_leaderIdle = true;
            m_leaderCv.wait(lock);
            m_leaderIdle = false;
        }
        m_leaderSleeping = false;
    }
}

void Engine::executorLoop(int index)
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        if (mustExit(index))
            break;
        if (m_hasLeader) {
            m_followerCv.wait(lock, [&] { return !m_hasLeader || mustExit(index); });
            continue;
        }
        m_hasLeader = true;
        std::optional<Work> work = lead(lock, index);
        m_hasLeader = false;
        m_followerCv.notify_one(); // the next idle executor takes over scheduling
        if (!work)
            break;
        ++m_inFlight;
        lock.unlock();
        run(*work, index);
        lock.lock();
        --m_inFlight;
    }
    m_executorRunning[std::size_t(index)] = false;
    m_followerCv.notify_all();
}

void Engine::run(Work &work, int executor)
{
    if (work.step) {
        executeStep(*work.step, executor); // hands the step back itself
        return;
    }
    execute(*work.batch, executor);
    std::lock_guard lock(m_mutex);
    m_scheduler->finished(*work.batch, m_clock->now());
}

void Engine::executeStep(StepWork &step, int executor)
{
    const nvtx::Range range(nvtx::Category::Engine, [&] {
        return "step " + std::to_string(step.id) + " n=" + std::to_string(step.items.size()) +
               " prefill=" + std::to_string(step.prefillTokens) +
               " decode=" + std::to_string(step.decodeTokens);
    });
    std::vector<StepOutcome> outcomes(step.items.size());
    const TimePoint start = m_clock->now();
    const Status status = MemoryGuard::runStep(*m_backend->steps(), step.items, outcomes);
    const TimePoint end = m_clock->now();
    StepDone done;
    bool wake = false;
    {
        // Token events are emitted in here, in order, before any completion.
        std::lock_guard lock(m_mutex);
        if (m_scheduler->finished(step, status, outcomes, end, done)) {
            m_pokes.fetch_add(1, std::memory_order_release);
            wake = m_leaderSleeping;
        }
    }
    if (wake)
        m_leaderCv.notify_one();
    const BatchRecord br = stepRecordOf(step, start, end, status, executor);
    std::vector<RequestRecord> records;
    records.reserve(done.done.size());
    for (std::size_t i = 0; i < done.done.size(); ++i)
        records.push_back(completedRecord(done.done[i].request, done.responses[i], step.id));
    m_metrics.recordBatch(br, records, end);
    for (std::size_t i = 0; i < done.done.size(); ++i)
        for (Interceptor *interceptor : m_interceptors)
            interceptor->observe(done.done[i].request, done.responses[i], records[i]);
    notifyEach(*m_observers.current(), "onBatchCompleted",
               [&](EngineObserver &o) { o.onBatchCompleted(br, records); });
    for (std::size_t i = 0; i < done.done.size(); ++i)
        complete(done.done[i].done, std::move(done.responses[i]));
}

void Engine::execute(Batch &batch, int executor)
{
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
    std::vector<SequenceResult> results(n);
    const TimePoint start = m_clock->now();
    const GuardedRun run = m_guard.runGuarded(input, results);
    const TimePoint end = m_clock->now();
    if (const auto lowering = MemoryGuard::loweredLimit(run, int(n)))
        lowerMemoryLimit(*lowering);

    const BatchRecord br = batchRecordOf(batch, start, end, run, executor);
    std::vector<Response> responses;
    std::vector<RequestRecord> records;
    batchOutcomes(batch, br, run.status, results, responses, records);
    m_metrics.recordBatch(br, records, end);
    for (std::size_t i = 0; i < n; ++i)
        for (Interceptor *interceptor : m_interceptors)
            interceptor->observe(batch.items[i].request, responses[i], records[i]);
    notifyEach(*m_observers.current(), "onBatchCompleted",
               [&](EngineObserver &o) { o.onBatchCompleted(br, records); });
    for (std::size_t i = 0; i < n; ++i)
        complete(batch.items[i].done, std::move(responses[i]));
}

void Engine::shutdown(ShutdownMode mode)
{
    std::lock_guard shutdownLock(m_shutdownMutex);
    if (m_shutDown)
        return;
    std::vector<Pending> rest;
    std::vector<std::thread> executors;
    std::shared_ptr<const BatchingConfig> config;
    {
        std::lock_guard lock(m_mutex);
        config = m_config.current();
        m_stopping = true;
        m_draining = mode == ShutdownMode::Drain;
        m_pokes.fetch_add(1, std::memory_order_release);
        if (mode == ShutdownMode::Fail)
            rest = m_scheduler->takeAll();
    }
    fail(rest, StatusCode::ShuttingDown, "engine shut down before the request ran", *config);
    if (m_manual) {
        // No threads: drain on this one.
        while (queueDepth() > 0) {
            if (!runSchedulerOnce().dispatched && queueDepth() > 0) {
                std::vector<Pending> left;
                {
                    std::lock_guard lock(m_mutex);
                    left = m_scheduler->takeAll();
                    config = m_config.current();
                }
                fail(left, StatusCode::ShuttingDown, "engine shut down before a full static batch formed",
                     *config);
            }
        }
    }
    {
        std::lock_guard lock(m_mutex);
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
