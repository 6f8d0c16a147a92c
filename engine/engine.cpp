#include "engine.h"
#include "nvtx.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <utility>

#ifdef __linux__
#include <sys/prctl.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define BP_CPU_RELAX() _mm_pause()
#else
#define BP_CPU_RELAX() ((void)0)
#endif

namespace bp {

namespace {
RequestRecord recordOf(const Request &r)
{
    RequestRecord rec;
    rec.id = r.id;
    rec.arrival = r.arrival;
    rec.inputTokens = int(r.tokens.size());
    return rec;
}

void complete(Completion &done, Response &&response)
{
    try {
        done(std::move(response));
    } catch (const std::exception &e) {
        // A throwing completion is a caller bug; the engine must keep serving.
        std::fprintf(stderr, "batchpilot: completion threw: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "batchpilot: completion threw a non-standard exception\n");
    }
}

// Calls `call(observer)` for each observer. An observer that throws is a bug
// in it, not a reason to lose the request or the process: the exception is
// reported (the first few times) and the remaining observers still run.
template <typename Call>
void notifyEach(const std::vector<std::shared_ptr<EngineObserver>> &observers, const char *what, Call &&call)
{
    static std::atomic<int> reported{0};
    for (const auto &o : observers) {
        try {
            call(*o);
        } catch (const std::exception &e) {
            if (reported.fetch_add(1, std::memory_order_relaxed) < 10)
                std::fprintf(stderr, "batchpilot: an observer's %s threw: %s\n", what, e.what());
        } catch (...) {
            if (reported.fetch_add(1, std::memory_order_relaxed) < 10)
                std::fprintf(stderr, "batchpilot: an observer's %s threw a non-standard exception\n", what);
        }
    }
}
} // namespace

Result<std::unique_ptr<Engine>> Engine::create(EngineOptions options)
{
    if (!options.backend)
        return Status(StatusCode::InvalidArgument, "engine needs a backend");
    if (Status s = validate(options.batching); !s)
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
    : m_backend(std::move(options.backend)),
      m_clock(options.clock ? options.clock : &RealClock::instance()),
      m_manual(options.manualScheduling),
      m_spin(options.manualScheduling ? Duration::zero() : options.spin),
      m_metrics(m_clock->now()),
      m_batcher(options.batching, m_backend->info().limits()),
      m_current(std::make_shared<const BatchingConfig>(options.batching)),
      m_targetInstances(options.batching.instances),
      m_observers(std::make_shared<const std::vector<std::shared_ptr<EngineObserver>>>())
{
    m_history.push_back({m_clock->now(), 1, "initial", "start", options.batching});
    m_cache.configure(options.batching.cache.maxEntries, options.batching.cache.maxBytes);
    m_cacheEnabled.store(options.batching.cache.enabled);
}

Engine::~Engine()
{
    shutdown(ShutdownMode::Drain);
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

Status Engine::submit(Request request, Completion done)
{
    if (!done)
        return {StatusCode::InvalidArgument, "submit needs a completion callback"};
    const TimePoint now = m_clock->now();
    if (request.arrival == TimePoint{})
        request.arrival = now;
    if (request.id == 0)
        request.id = m_nextRequestId.fetch_add(1, std::memory_order_relaxed);
    if (m_cacheEnabled.load(std::memory_order_relaxed) && serveFromCache(request, done))
        return Status::ok();
    Pending pending{std::move(request), std::move(done)};
    Status status;
    bool wake = false;
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping)
            status = Status(StatusCode::ShuttingDown, "engine is shutting down");
        else
            status = m_batcher.admit(pending, now);
        if (status.isOk() && m_batcher.lastAdmitNeedsWake()) {
            m_pokes.fetch_add(1, std::memory_order_release);
            wake = m_leaderSleeping;
        }
    }
    if (!status) {
        m_metrics.recordFailure(status.code());
        auto obs = observers();
        if (!obs->empty()) {
            RequestRecord rec = recordOf(pending.request);
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

bool Engine::serveFromCache(Request &request, Completion &done)
{
    auto hit = m_cache.lookup(request.tokens, request.maxNewTokens);
    if (!hit)
        return false;
    const TimePoint now = m_clock->now();
    Response r;
    r.requestId = request.id;
    r.cacheHit = true;
    r.values = std::move(hit->values);
    r.tokens = std::move(hit->tokens);
    r.timing.total = now - request.arrival;
    r.batch.reason = DispatchReason::CacheHit;
    RequestRecord rec = recordOf(request);
    rec.total = r.timing.total;
    rec.outputTokens = int(r.tokens.size());
    rec.cacheHit = true;
    m_submitted.fetch_add(1, std::memory_order_relaxed);
    m_metrics.recordCacheHit(rec, now);
    notifyEach(*observers(), "onRequestServedFromCache", [&](EngineObserver &o) { o.onRequestServedFromCache(rec); });
    complete(done, std::move(r));
    return true;
}

Status Engine::applyLocked(const ConfigPatch &patch, std::string origin, const std::string &why, ConfigChange &change)
{
    change = {};
    const BatchingConfig &before = *m_current;
    BatchingConfig config = patch.appliedTo(before);
    // The one gate for every writer, controllers included.
    if (Status s = validate(config); !s)
        return s;
    if (before == config)
        return Status::ok();
    std::string summary = describeChange(before, config);
    if (!why.empty())
        summary = why + ": " + summary;
    change = {m_clock->now(), ++m_configVersion, std::move(summary), std::move(origin), config};
    // `previous` keeps `before` alive past the swap.
    const std::shared_ptr<const BatchingConfig> previous =
        std::exchange(m_current, std::make_shared<const BatchingConfig>(config));
    m_batcher.reconfigure(config, m_configVersion);
    if (before.queueCount() != config.queueCount() || before.policy != config.policy ||
        before.bucketEdges != config.bucketEdges || before.hybrid != config.hybrid)
        m_metrics.resetQueues();
    if (config.cache.enabled != before.cache.enabled || config.cache.maxEntries != before.cache.maxEntries ||
        config.cache.maxBytes != before.cache.maxBytes) {
        m_cache.configure(config.cache.maxEntries, config.cache.maxBytes);
        if (!config.cache.enabled)
            m_cache.clear();
        m_cacheEnabled.store(config.cache.enabled);
    }
    m_history.push_back(change); // bounded; keeps the initial entry
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

void Engine::notifyConfigChanged(const ConfigChange &change)
{
    m_leaderCv.notify_one();
    notifyEach(*observers(), "onConfigChanged", [&](EngineObserver &o) { o.onConfigChanged(change); });
}

Status Engine::reconfigure(const BatchingConfig &config, std::string origin)
{
    return update(ConfigPatch::whole(config), std::move(origin)).status();
}

Result<ConfigUpdate> Engine::update(const ConfigPatch &patch, std::string origin)
{
    ConfigUpdate result;
    ConfigChange change;
    {
        std::lock_guard lock(m_mutex);
        if (m_stopping)
            return Status(StatusCode::ShuttingDown, "engine is shutting down");
        result.before = *m_current;
        if (Status s = applyLocked(patch, std::move(origin), {}, change); !s)
            return s;
        result.after = *m_current;
        result.version = change.version;
    }
    if (change.version)
        notifyConfigChanged(change);
    return result;
}

BatchingConfig Engine::config() const
{
    std::lock_guard lock(m_mutex);
    return *m_current;
}

std::size_t Engine::queueDepth() const
{
    std::lock_guard lock(m_mutex);
    return m_batcher.size();
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
        s.config = *m_current;
        s.configVersion = m_configVersion;
        s.queueDepth = m_batcher.size();
        s.queueDepths = m_batcher.depths();
        s.inFlightBatches = m_inFlight;
        s.arrivalRate = m_batcher.arrivalRate(now);
        s.effectiveDelay = m_batcher.effectiveDelay();
        s.configHistory = m_history;
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
    std::lock_guard lock(m_observerMutex);
    auto next = std::make_shared<std::vector<std::shared_ptr<EngineObserver>>>(*m_observers);
    next->push_back(std::move(observer));
    m_observers = std::move(next);
}

void Engine::removeObserver(const std::shared_ptr<EngineObserver> &observer)
{
    std::lock_guard lock(m_observerMutex);
    auto next = std::make_shared<std::vector<std::shared_ptr<EngineObserver>>>(*m_observers);
    std::erase(*next, observer);
    m_observers = std::move(next);
}

std::shared_ptr<const std::vector<std::shared_ptr<EngineObserver>>> Engine::observers() const
{
    std::lock_guard lock(m_observerMutex);
    return m_observers;
}

void Engine::fail(std::vector<Pending> &pending, StatusCode code, const std::string &message,
                  const BatchingConfig &config)
{
    if (pending.empty())
        return;
    const TimePoint now = m_clock->now();
    auto obs = observers();
    for (Pending &p : pending) {
        m_metrics.recordFailure(code);
        Response r;
        r.requestId = p.request.id;
        r.status = Status(code, message);
        r.timing.total = now - p.request.arrival;
        r.timing.queueWait = r.timing.total;
        if (!obs->empty()) {
            RequestRecord rec = recordOf(p.request);
            rec.status = code;
            rec.total = rec.queueWait = r.timing.total;
            rec.bucket = config.bucketFor(rec.inputTokens);
            notifyEach(*obs, "onRequestFailed", [&](EngineObserver &o) { o.onRequestFailed(rec); });
        }
        complete(p.done, std::move(r));
    }
    pending.clear();
}

Engine::Step Engine::runSchedulerOnce()
{
    Step step;
    std::vector<Pending> expired;
    std::optional<Batch> batch;
    ConfigChange change;
    std::shared_ptr<const BatchingConfig> config;
    {
        std::lock_guard lock(m_mutex);
        if (auto adjustment = m_slo.evaluate(*m_current, m_clock->now()))
            applyControllerLocked(ConfigPatch::diff(*m_current, adjustment->config), "slo-controller",
                                  adjustment->reason, change);
        const nvtx::Range range(nvtx::Category::Engine, "schedule");
        Batcher::Poll poll = m_batcher.poll(m_clock->now(), m_draining, true);
        step.expired = poll.expired.size();
        step.wakeAt = poll.wakeAt;
        step.dispatched = poll.batch.has_value();
        expired = std::move(poll.expired);
        batch = std::move(poll.batch);
        config = m_current;
    }
    if (change.version)
        notifyConfigChanged(change);
    fail(expired, StatusCode::DeadlineExceeded, "deadline passed while queued", *config);
    if (batch)
        execute(*batch, 0);
    return step;
}

bool Engine::mustExit(int index) const
{
    return index >= m_targetInstances || (m_stopping && m_batcher.size() == 0);
}

std::optional<Batch> Engine::lead(std::unique_lock<std::mutex> &lock, int index)
{
#ifdef __linux__
    // The default 50 µs timer slack would stretch every queue delay.
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
    bool spunIdle = false; // the last spin ended with nothing new: sleep next
    for (;;) {
        if (mustExit(index))
            return std::nullopt;
        const TimePoint now = m_clock->now();
        if (auto adjustment = m_slo.evaluate(*m_current, now)) {
            ConfigChange change;
            applyControllerLocked(ConfigPatch::diff(*m_current, adjustment->config), "slo-controller",
                                  adjustment->reason, change);
            lock.unlock();
            if (change.version)
                notifyConfigChanged(change);
            lock.lock();
            continue;
        }
        Batcher::Poll poll = [&] {
            const nvtx::Range range(nvtx::Category::Engine, "schedule");
            return m_batcher.poll(now, m_draining, true);
        }();
        if (!poll.expired.empty()) {
            // A poll can both expire requests and dispatch a batch. The
            // config is read here, under the lock: reconfigure may replace it
            // as soon as the lock is released.
            const std::shared_ptr<const BatchingConfig> config = m_current;
            lock.unlock();
            fail(poll.expired, StatusCode::DeadlineExceeded, "deadline passed while queued", *config);
            lock.lock();
        }
        if (poll.batch)
            return std::move(poll.batch);
        if (!poll.expired.empty())
            continue;
        const std::optional<TimePoint> wakeAt = poll.wakeAt;
        if (m_stopping && !wakeAt && m_batcher.size() > 0) {
            // Draining and the policy still will not dispatch (static without
            // flush-on-drain): fail the rest.
            std::vector<Pending> rest = m_batcher.takeAll();
            const std::shared_ptr<const BatchingConfig> config = m_current;
            lock.unlock();
            fail(rest, StatusCode::ShuttingDown, "engine shut down before a full static batch formed", *config);
            lock.lock();
            continue;
        }
        if (m_spin > Duration::zero() && !spunIdle && (!wakeAt || *wakeAt - now <= m_spin)) {
            // Busy-wait for the dispatch time or for news, whichever is first.
            const TimePoint until = wakeAt ? *wakeAt : now + m_spin;
            const std::uint64_t pokes = m_pokes.load(std::memory_order_acquire);
            lock.unlock();
            bool news = false;
            while (SteadyClock::now() < until) {
                if (m_pokes.load(std::memory_order_acquire) != pokes) {
                    news = true;
                    break;
                }
                BP_CPU_RELAX();
            }
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
        std::optional<Batch> batch = lead(lock, index);
        m_hasLeader = false;
        m_followerCv.notify_one(); // the next idle executor takes over scheduling
        if (!batch)
            break;
        ++m_inFlight;
        lock.unlock();
        execute(*batch, index);
        lock.lock();
        --m_inFlight;
    }
    m_executorRunning[std::size_t(index)] = false;
    m_followerCv.notify_all();
}

namespace {
bool looksLikeOutOfMemory(const std::string &what)
{
    return what.find("out of memory") != std::string::npos || what.find("can't allocate memory") != std::string::npos ||
           what.find("bad_alloc") != std::string::npos;
}
} // namespace

Status Engine::runGuarded(const BatchInput &input, std::vector<SequenceResult> &out, int &splits, int &largestOk)
{
    Status status;
    try {
        const nvtx::Range range(nvtx::Category::Backend, [&] {
            return "run n=" + std::to_string(input.requests.size()) + " L=" + std::to_string(input.paddedLength);
        });
        status = m_backend->run(input, out);
    } catch (const std::bad_alloc &) {
        status = Status(StatusCode::ResourceExhausted, "out of memory (std::bad_alloc)");
    } catch (const std::exception &e) {
        const std::string what = e.what();
        status = Status(looksLikeOutOfMemory(what) ? StatusCode::ResourceExhausted : StatusCode::Internal,
                        "backend failed: " + what);
    } catch (...) {
        // Not a std::exception (a library throwing an int, a foreign type):
        // the batch fails, the engine keeps serving.
        status = Status(StatusCode::Internal, "backend failed: it threw a non-standard exception");
    }
    const std::size_t n = input.requests.size();
    if (status.isOk())
        largestOk = std::max(largestOk, int(n));
    if (status.code() != StatusCode::ResourceExhausted || n <= 1)
        return status;
    // Split in halves and retry each; a part that still fails keeps its
    // status per sequence, so the rest of the batch is not lost.
    ++splits;
    const std::size_t half = n / 2;
    for (auto [from, to] : {std::pair{std::size_t(0), half}, std::pair{half, n}}) {
        BatchInput part;
        part.paddedLength = input.paddedLength;
        part.requests.assign(input.requests.begin() + std::ptrdiff_t(from), input.requests.begin() + std::ptrdiff_t(to));
        std::vector<SequenceResult> partOut(to - from);
        const Status s = runGuarded(part, partOut, splits, largestOk);
        for (std::size_t i = from; i < to; ++i) {
            out[i] = std::move(partOut[i - from]);
            if (!s)
                out[i].status = s;
        }
    }
    return Status::ok();
}

void Engine::lowerMemoryLimit(int failedSize, int largestOk)
{
    const int limit = std::max(1, largestOk > 0 ? largestOk : failedSize / 2);
    ConfigChange change;
    {
        // Read and applied in one critical section, and only ever lowering:
        // a limit set meanwhile by anyone (a lower one included) stays.
        std::lock_guard lock(m_mutex);
        if (m_stopping)
            return;
        applyControllerLocked(ConfigPatch::lowerMemoryBatchLimit(limit), "memory-guard",
                              "out of memory at batch size " + std::to_string(failedSize) + ", largest that ran " +
                                  std::to_string(largestOk),
                              change);
    }
    if (change.version)
        notifyConfigChanged(change);
}

void Engine::observeOutcome(const Batch &batch, const std::vector<Response> &responses,
                            const std::vector<RequestRecord> &records)
{
    std::uint64_t ok = 0;
    for (const RequestRecord &r : records)
        if (r.status == StatusCode::Ok) {
            m_slo.observe(r.total);
            ++ok;
        }
    if (!m_cacheEnabled.load(std::memory_order_relaxed) || ok == 0)
        return;
    for (std::size_t i = 0; i < responses.size(); ++i)
        if (responses[i].status.isOk())
            m_cache.insert(batch.items[i].request.tokens, batch.items[i].request.maxNewTokens,
                           {responses[i].values, responses[i].tokens});
}

void Engine::execute(Batch &batch, int executor)
{
    const std::size_t n = batch.items.size();
    const nvtx::Range range(nvtx::Category::Engine, [&] {
        return "batch " + std::to_string(batch.id) + " " + std::string(policyName(batch.policy)) +
               " n=" + std::to_string(n) + " L=" + std::to_string(batch.paddedLength) +
               " bucket=" + std::to_string(batch.bucket) + " " + std::string(dispatchReasonName(batch.reason));
    });
    BatchInput input;
    input.paddedLength = batch.paddedLength;
    input.requests.reserve(n);
    std::int64_t realTokens = 0;
    for (const Pending &p : batch.items) {
        input.requests.push_back(&p.request);
        realTokens += std::int64_t(p.request.tokens.size());
    }
    std::vector<SequenceResult> results(n);
    const TimePoint start = m_clock->now();
    int splits = 0, largestOk = 0;
    const Status status = runGuarded(input, results, splits, largestOk);
    const TimePoint end = m_clock->now();
    if (splits > 0)
        lowerMemoryLimit(int(n), largestOk);

    BatchRecord br;
    br.id = batch.id;
    br.dispatchedAt = batch.dispatchedAt;
    br.intendedAt = batch.intendedAt;
    br.startedAt = start;
    br.size = int(n);
    br.paddedLength = batch.paddedLength;
    br.realTokens = realTokens;
    br.paddedTokens = std::int64_t(n) * batch.paddedLength;
    br.compute = end - start;
    br.reason = batch.reason;
    br.policy = batch.policy;
    br.bucket = batch.bucket;
    br.executor = executor;
    br.configVersion = batch.configVersion;
    br.status = status.code();
    br.oomSplits = splits;

    std::vector<RequestRecord> records(n);
    std::vector<Response> responses(n);
    for (std::size_t i = 0; i < n; ++i) {
        const Request &req = batch.items[i].request;
        SequenceResult &res = results[i];
        Response &r = responses[i];
        r.requestId = req.id;
        r.status = status.isOk() ? res.status : status;
        r.values = std::move(res.values);
        r.tokens = std::move(res.tokens);
        r.timing.queueWait = batch.dispatchedAt - req.arrival;
        r.timing.compute = br.compute;
        r.timing.total = end - req.arrival;
        r.timing.intendedWait = std::max(Duration::zero(), batch.intendedAt - req.arrival);
        if (!r.tokens.empty() && res.firstTokenAfter > Duration::zero())
            r.timing.timeToFirstToken = (start - req.arrival) + res.firstTokenAfter;
        if (r.tokens.size() > 1 && res.lastTokenAfter > res.firstTokenAfter)
            r.timing.timePerOutputToken =
                (res.lastTokenAfter - res.firstTokenAfter) / std::int64_t(r.tokens.size() - 1);
        r.batch = {batch.id, int(n), batch.paddedLength, batch.bucket, batch.reason};

        RequestRecord &rec = records[i];
        rec = recordOf(req);
        rec.queueWait = r.timing.queueWait;
        rec.compute = r.timing.compute;
        rec.total = r.timing.total;
        rec.timeToFirstToken = r.timing.timeToFirstToken;
        rec.outputTokens = int(r.tokens.size());
        rec.bucket = batch.bucket;
        rec.batchId = batch.id;
        rec.status = r.status.code();
    }
    m_metrics.recordBatch(br, records, end);
    observeOutcome(batch, responses, records);
    notifyEach(*observers(), "onBatchCompleted", [&](EngineObserver &o) { o.onBatchCompleted(br, records); });
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
        config = m_current;
        m_stopping = true;
        m_draining = mode == ShutdownMode::Drain;
        m_pokes.fetch_add(1, std::memory_order_release);
        if (mode == ShutdownMode::Fail)
            rest = m_batcher.takeAll();
    }
    fail(rest, StatusCode::ShuttingDown, "engine shut down before the request ran", *config);
    if (m_manual) {
        // No threads: drain on this one.
        while (queueDepth() > 0) {
            if (!runSchedulerOnce().dispatched && queueDepth() > 0) {
                std::vector<Pending> left;
                {
                    std::lock_guard lock(m_mutex);
                    left = m_batcher.takeAll();
                    config = m_current;
                }
                fail(left, StatusCode::ShuttingDown, "engine shut down before a full static batch formed", *config);
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
