// EngineCore: construction, admission, snapshots and failure completions.
// The config path is in engine_config.cpp, the executor step in
// executor_step.cpp.
#include "engine_core.h"

#include "engine/sched/outcome.h"

#include <algorithm>
#include <functional>
#include <utility>

namespace bp {

namespace {

// The memory guard retries the halves of a batch that ran out of memory
// from the start (MemoryGuard::runSplitting): a generating backend streams
// the tokens of the failed attempt again. The client already has them, so
// each index passes once, in order. (Greedy decoding regenerates the same
// tokens; the response carries the retry's.) The counter is shared by the
// copies of the callback; a request runs on one executor at a time.
std::function<void(const TokenEvent &)> onceEachToken(std::function<void(const TokenEvent &)> inner)
{
    auto next = std::make_shared<int>(0);
    return [inner = std::move(inner), next](const TokenEvent &e) {
        if (e.index < *next)
            return;
        *next = e.index + 1;
        inner(e);
    };
}

} // namespace

Result<std::unique_ptr<EngineCore>> EngineCore::create(BatchingConfig config,
                                                       std::shared_ptr<Backend> backend, const Clock &clock,
                                                       ExecutorDriver &driver, bool probeMemory)
{
    if (!backend)
        return Status(StatusCode::InvalidArgument, "engine needs a backend");
    if (Status s = validate(config); !s)
        return s;
    {
        // A paged model's KV pool is sized now, from this engine's config
        // (continuous.kv_cache_tokens, kv_memory_fraction,
        // prefix_cache.block_tokens). Another engine holding blocks of it
        // keeps the pool as it is (Unavailable): this one books against it.
        const int sequences = std::max({config.maxBatchSize, config.staticBatchSize,
                                        config.hybrid.staticSizes.back(), config.continuous.maxNumSeqs});
        const KvPoolRequest kv{config.continuous.kvCacheTokens, config.continuous.kvMemoryFraction,
                               config.prefixCache.blockTokens, sequences};
        if (Status s = backend->prepareKv(kv); !s && s.code() != StatusCode::Unavailable)
            return s;
    }
    if (Status s = schedulerSupports(config, backend->steps(), backend->info().name); !s)
        return s;
    if (probeMemory) {
        const int longest = std::min(backend->info().maxSequenceLength, config.bucketEdges.back());
        const int upTo =
            std::max({config.maxBatchSize, config.staticBatchSize, config.hybrid.staticSizes.back()});
        if (auto fits = backend->probeMaxBatch(longest, upTo); fits && *fits < upTo)
            config.memoryBatchLimit = std::max(1, *fits);
    }
    return std::unique_ptr<EngineCore>(new EngineCore(std::move(config), std::move(backend), clock, driver));
}

EngineCore::EngineCore(BatchingConfig config, std::shared_ptr<Backend> backend, const Clock &clock,
                       ExecutorDriver &driver)
    : m_backend(std::move(backend)), m_guard(m_backend), m_clock(clock), m_driver(driver),
      m_metrics(clock.now()), m_cache(config),
      m_scheduler(makeScheduler(config, m_backend->info().limits(), m_backend->steps(), m_unitIds)),
      m_config(config, clock.now())
{
    m_metrics.setGoodputSlo(config.goodput);
}

Status EngineCore::submit(Request request, Completion done)
{
    if (!done)
        return {StatusCode::InvalidArgument, "submit needs a completion callback"};
    const TimePoint now = m_clock.now();
    if (request.arrival == TimePoint{})
        request.arrival = now;
    if (request.id == 0)
        request.id = m_nextRequestId.fetch_add(1, std::memory_order_relaxed);
    for (Interceptor *interceptor : m_interceptors) {
        std::optional<Response> answer = interceptor->answer(request);
        if (!answer)
            continue;
        const TimePoint at = m_clock.now();
        RequestRecord rec;
        answeredOutcome(request, at, *answer, rec);
        m_submitted.fetch_add(1, std::memory_order_relaxed);
        m_metrics.recordCacheHit(rec, at);
        notifyEach(*m_observers.current(), "onRequestServedFromCache",
                   [&](EngineObserver &o) { o.onRequestServedFromCache(rec); });
        complete(done, std::move(*answer));
        return Status::ok();
    }
    if (request.onToken)
        request.onToken = onceEachToken(std::move(request.onToken));
    Pending pending{std::move(request), std::move(done)};
    Status status;
    bool wake = false;
    {
        MutexLock lock(m_mutex);
        if (m_stopping)
            status = Status(StatusCode::ShuttingDown, "engine is shutting down");
        else
            status = m_scheduler->admit(pending, now);
        if (status.isOk() && m_scheduler->lastAdmitNeedsWake())
            wake = m_driver.pokeLocked();
    }
    if (!status) {
        m_metrics.recordFailure(status.code());
        auto obs = m_observers.current();
        if (!obs->empty()) {
            RequestRecord rec = requestRecordOf(pending.request);
            rec.status = status.code();
            notifyEach(*obs, "onRequestFailed", [&](EngineObserver &o) { o.onRequestFailed(rec); });
        }
        return status;
    }
    m_submitted.fetch_add(1, std::memory_order_relaxed);
    if (wake)
        m_driver.wake();
    return status;
}

BatchingConfig EngineCore::config() const
{
    MutexLock lock(m_mutex);
    return *m_config.current();
}

std::size_t EngineCore::queueDepth() const
{
    MutexLock lock(m_mutex);
    return m_scheduler->size();
}

Snapshot EngineCore::snapshot() const
{
    Snapshot s;
    const TimePoint now = m_clock.now();
    {
        MutexLock lock(m_mutex);
        s.config = *m_config.current();
        s.configVersion = m_config.version();
        s.queueDepth = m_scheduler->size();
        s.inFlightBatches = m_inFlight;
        SchedulerGauges g = m_scheduler->gauges(now);
        s.queueDepths = std::move(g.depths);
        s.arrivalRate = g.arrivalRate;
        s.effectiveDelay = g.effectiveDelay;
        if (g.iteration) {
            s.runningSequences = g.iteration->running;
            s.waitingSequences = g.iteration->waiting;
            // The queue is what waits: running sequences are being served
            // (Scheduler::size() counts both, for admission and draining).
            s.queueDepth = g.iteration->waiting;
            s.kvTokens = g.iteration->kvTokens;
            s.kvCapacityTokens = g.iteration->kvCapacityTokens;
            s.prefixCacheTokens = g.iteration->prefixCacheTokens;
            s.kvUsageRatio = g.iteration->kvCapacityTokens > 0
                                 ? double(g.iteration->kvTokens) / double(g.iteration->kvCapacityTokens)
                                 : 0.0;
        }
        s.configHistory = m_config.history();
    }
    m_metrics.fill(s, now);
    m_metrics.fillQueues(s, s.config);
    const CacheStats cs = m_cache.stats();
    s.cache = {s.config.cache.enabled, cs.hits, cs.misses, cs.entries, cs.evictions, cs.bytes};
    s.takenAt = now;
    s.submitted = m_submitted.load(std::memory_order_relaxed);
    s.modelName = m_backend->info().name;
    s.device = m_backend->info().device;
    return s;
}

void EngineCore::shutdown(ShutdownMode mode)
{
    std::vector<Pending> rest;
    std::shared_ptr<const BatchingConfig> config;
    {
        MutexLock lock(m_mutex);
        m_stopping = true;
        m_draining = mode == ShutdownMode::Drain;
        m_driver.pokeLocked();
        if (mode == ShutdownMode::Fail)
            rest = m_scheduler->takeAll();
        config = m_config.current();
    }
    failShutDown(rest, *config);
}

void EngineCore::failHeld()
{
    std::vector<Pending> rest;
    std::shared_ptr<const BatchingConfig> config;
    {
        MutexLock lock(m_mutex);
        rest = m_scheduler->takeAll();
        config = m_config.current();
    }
    failShutDown(rest, *config);
}

void EngineCore::failShutDown(std::vector<Pending> &rest, const BatchingConfig &config)
{
    failWith(rest, StatusCode::ShuttingDown, "engine shut down before the request ran", config);
}

void EngineCore::failEach(std::vector<Scheduler::Failure> &failures, const BatchingConfig &config)
{
    for (Scheduler::Failure &f : failures) {
        std::vector<Pending> one;
        one.push_back(std::move(f.pending));
        failWith(one, f.status.code(), f.status.message(), config);
    }
    failures.clear();
}

void EngineCore::failWith(std::vector<Pending> &pending, StatusCode code, const std::string &message,
                          const BatchingConfig &config)
{
    if (pending.empty())
        return;
    const TimePoint now = m_clock.now();
    auto obs = m_observers.current();
    for (Pending &p : pending) {
        m_metrics.recordFailure(code);
        if (!obs->empty()) {
            const RequestRecord rec =
                failedRecord(p.request, code, now, config.bucketFor(int(p.request.tokens.size())));
            notifyEach(*obs, "onRequestFailed", [&](EngineObserver &o) { o.onRequestFailed(rec); });
        }
        complete(p.done, failedResponse(p.request, Status(code, message), now));
    }
    pending.clear();
}

} // namespace bp
