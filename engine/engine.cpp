// Engine: construction, admission, configuration, snapshots and failure
// completions. The threads (leader/followers, execution, shutdown) are in
// engine_executors.cpp.
#include "engine.h"

#include "outcome.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
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

Result<std::unique_ptr<Engine>> Engine::create(EngineOptions options)
{
    if (!options.backend)
        return Status(StatusCode::InvalidArgument, "engine needs a backend");
    if (Status s = validate(options.batching); !s)
        return s;
    if (Status s =
            schedulerSupports(options.batching, options.backend->steps(), options.backend->info().name);
        !s)
        return s;
    if (options.probeMemory) {
        const BatchingConfig &c = options.batching;
        const int longest = std::min(options.backend->info().maxSequenceLength, c.bucketEdges.back());
        const int upTo = std::max({c.maxBatchSize, c.staticBatchSize, c.hybrid.staticSizes.back()});
        if (auto fits = options.backend->probeMaxBatch(longest, upTo); fits && *fits < upTo)
            options.batching.memoryBatchLimit = std::max(1, *fits);
    }
    std::unique_ptr<Engine> engine(new Engine(std::move(options)));
    if (!engine->m_manual) {
        std::lock_guard lock(engine->m_mutex);
        engine->resizeExecutors();
    }
    return engine;
}

Engine::Engine(EngineOptions options)
    : m_backend(std::move(options.backend)), m_guard(m_backend),
      m_clock(options.clock ? options.clock : &RealClock::instance()), m_manual(options.manualScheduling),
      m_spin(options.manualScheduling ? Duration::zero() : options.spin), m_metrics(m_clock->now()),
      m_cache(options.batching),
      m_scheduler(makeScheduler(options.batching, m_backend->info().limits(), m_backend->steps())),
      m_config(options.batching, m_clock->now()), m_targetInstances(options.batching.instances)
{
    m_metrics.setGoodputSlo(options.batching.goodput);
}

Engine::~Engine()
{
    shutdown(ShutdownMode::Drain);
}

Status Engine::submit(Request request, Completion done)
{
    if (!done)
        return {StatusCode::InvalidArgument, "submit needs a completion callback"};
    const TimePoint now = m_clock->now();
    if (request.arrival == TimePoint{})
        request.arrival = now;
    if (request.id == 0)
        request.id = m_nextRequestId.fetch_add(1, std::memory_order_relaxed);
    for (Interceptor *interceptor : m_interceptors) {
        std::optional<Response> answer = interceptor->answer(request);
        if (!answer)
            continue;
        const TimePoint at = m_clock->now();
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
        std::lock_guard lock(m_mutex);
        if (m_stopping)
            status = Status(StatusCode::ShuttingDown, "engine is shutting down");
        else
            status = m_scheduler->admit(pending, now);
        if (status.isOk() && m_scheduler->lastAdmitNeedsWake()) {
            m_pokes.fetch_add(1, std::memory_order_release);
            wake = m_leaderSleeping;
        }
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
        m_leaderCv.notify_one();
    return status;
}

Status Engine::applyLocked(const ConfigPatch &patch, std::string origin, const std::string &why,
                           ConfigChange &change)
{
    // `before` keeps the previous config alive past the swap.
    const std::shared_ptr<const BatchingConfig> before = m_config.current();
    const BatchingConfig next = patch.appliedTo(*before);
    const bool switchKind = !sameSchedulerKind(*before, next);
    if (switchKind) {
        if (Status s = schedulerSupports(next, m_backend->steps(), m_backend->info().name); !s)
            return s;
        if (m_scheduler->hasWorkInFlight())
            return {StatusCode::Unavailable,
                    "a generation step is running; switch the policy again in a moment"};
    }
    // The one gate for every writer, controllers included.
    if (Status s = m_config.apply(patch, std::move(origin), why, m_clock->now(), change); !s)
        return s;
    if (change.version == 0)
        return Status::ok();
    const BatchingConfig &config = *m_config.current();
    if (switchKind) {
        // Another kind of scheduler: move the queue over in admission order.
        std::unique_ptr<Scheduler> fresh =
            makeScheduler(config, m_backend->info().limits(), m_backend->steps());
        fresh->reconfigure(config, m_config.version());
        fresh->continueUnitIdsFrom(*m_scheduler); // batch and step ids stay unique in the session
        const TimePoint now = m_clock->now();
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
    if (config.instances != m_targetInstances) {
        m_targetInstances = config.instances;
        resizeExecutors();
    }
    m_pokes.fetch_add(1, std::memory_order_release);
    return Status::ok();
}

void Engine::applyControllerLocked(const ConfigPatch &patch, std::string origin, const std::string &why,
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

bool Engine::applyProposalsLocked(TimePoint now, ConfigChange &change)
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

void Engine::notifyConfigChanged(const ConfigChange &change)
{
    m_leaderCv.notify_one();
    notifyEach(*m_observers.current(), "onConfigChanged",
               [&](EngineObserver &o) { o.onConfigChanged(change); });
}

Status Engine::reconfigure(const BatchingConfig &config, std::string origin)
{
    return update(ConfigPatch::whole(config), std::move(origin)).status();
}

Result<ConfigUpdate> Engine::update(const ConfigPatch &patch, std::string origin)
{
    ConfigUpdate result;
    ConfigChange change;
    std::vector<Scheduler::Failure> refused;
    {
        std::lock_guard lock(m_mutex);
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

void Engine::lowerMemoryLimit(const MemoryGuard::Lowering &lowering)
{
    ConfigChange change;
    {
        // Read and applied in one critical section, and only ever lowering:
        // a limit set meanwhile by anyone (a lower one included) stays.
        std::lock_guard lock(m_mutex);
        if (m_stopping)
            return;
        applyControllerLocked(ConfigPatch::lowerMemoryBatchLimit(lowering.limit),
                              std::string(kMemoryGuardOrigin), lowering.why, change);
    }
    if (change.version)
        notifyConfigChanged(change);
}

BatchingConfig Engine::config() const
{
    std::lock_guard lock(m_mutex);
    return *m_config.current();
}

std::size_t Engine::queueDepth() const
{
    std::lock_guard lock(m_mutex);
    return m_scheduler->size();
}

bool Engine::schedulerIdle() const
{
    std::lock_guard lock(m_mutex);
    return m_leaderIdle;
}

Snapshot Engine::snapshot() const
{
    Snapshot s;
    const TimePoint now = m_clock->now();
    {
        std::lock_guard lock(m_mutex);
        s.config = *m_config.current();
        s.configVersion = m_config.version();
        s.queueDepth = m_scheduler->size();
        s.queueDepths = m_scheduler->depths();
        s.inFlightBatches = m_inFlight;
        s.arrivalRate = m_scheduler->arrivalRate(now);
        s.effectiveDelay = m_scheduler->effectiveDelay();
        if (const std::optional<IterationGauges> g = m_scheduler->iterationGauges()) {
            s.runningSequences = g->running;
            s.waitingSequences = g->waiting;
            s.kvTokens = g->kvTokens;
            s.kvCapacityTokens = g->kvCapacityTokens;
            s.kvUsageRatio =
                g->kvCapacityTokens > 0 ? double(g->kvTokens) / double(g->kvCapacityTokens) : 0.0;
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

void Engine::addObserver(std::shared_ptr<EngineObserver> observer)
{
    m_observers.add(std::move(observer));
}

void Engine::removeObserver(const std::shared_ptr<EngineObserver> &observer)
{
    m_observers.remove(observer);
}

void Engine::failEach(std::vector<Scheduler::Failure> &failures, const BatchingConfig &config)
{
    for (Scheduler::Failure &f : failures) {
        std::vector<Pending> one;
        one.push_back(std::move(f.pending));
        fail(one, f.status.code(), f.status.message(), config);
    }
    failures.clear();
}

void Engine::fail(std::vector<Pending> &pending, StatusCode code, const std::string &message,
                  const BatchingConfig &config)
{
    if (pending.empty())
        return;
    const TimePoint now = m_clock->now();
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
