// The strategies of docs/optimizations.md on a fake clock: adaptive delay, the SLO (AIMD)
// controller, hybrid routing, the response cache, the memory guard and
// priorities.
#include "engine/exec/engine.h"
#include "engine/exec/response_cache.h"
#include "engine/sched/adaptive.h"
#include "engine/sched/batcher.h"
#include "engine/sched/rate_estimator.h"

#include <QtTest>

#include <map>
#include <mutex>

using namespace bp;
using namespace std::chrono_literals;

namespace {
const TimePoint t0 = TimePoint(1000s);

Pending make(int length, TimePoint arrival, int priority = 0, std::uint64_t id = 0)
{
    Pending p;
    p.request.id = id;
    p.request.tokens.assign(std::size_t(length), 3);
    p.request.arrival = arrival;
    p.request.priority = priority;
    p.done = [](Response &&) {};
    return p;
}

// Admits `count` requests evenly over [from, from + span) and polls as it
// goes; returns the end time, or a default time point if an admit failed.
TimePoint feed(Batcher &b, TimePoint from, Duration span, int count, int length = 8)
{
    const Duration gap = span / count;
    TimePoint t = from;
    for (int i = 0; i < count; ++i, t += gap) {
        Pending p = make(length, t);
        if (!b.admit(p, t).isOk())
            return {};
        while (b.poll(t, false).batch()) {
        }
    }
    return t;
}

// Fails any batch larger than `limit` as out of memory.
class SmallMemoryBackend : public Backend {
public:
    explicit SmallMemoryBackend(int limit) : m_limit(limit) { m_info.name = "test:small-memory"; }
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &in, std::vector<SequenceResult> &out) override
    {
        std::lock_guard lock(m_mutex);
        sizes.push_back(int(in.requests.size()));
        if (int(in.requests.size()) > m_limit)
            return {StatusCode::ResourceExhausted,
                    "out of memory: batch of " + std::to_string(in.requests.size())};
        for (std::size_t i = 0; i < in.requests.size(); ++i)
            out[i].tokens = in.requests[i]->tokens;
        return Status::ok();
    }
    std::optional<int> probeMaxBatch(int, int upTo) override
    {
        int fits = 1; // what a CUDA backend does: grow until it fails
        while (fits * 2 <= upTo && fits * 2 <= m_limit)
            fits *= 2;
        return fits;
    }
    std::vector<int> sizes;

private:
    ModelInfo m_info;
    int m_limit;
    std::mutex m_mutex;
};

// A generative backend that streams (Request::onToken per token, as the
// tiny decoder does) and runs out of memory after `failAfter` tokens when a
// batch is larger than `limit`: the tokens streamed before the failure were
// already delivered when the memory guard retries the halves.
class StreamingSmallMemoryBackend : public Backend {
public:
    StreamingSmallMemoryBackend(int limit, int failAfter) : m_limit(limit), m_failAfter(failAfter)
    {
        m_info.name = "test:streaming-small-memory";
        m_info.generative = true;
        m_info.maxNewTokensLimit = 64;
    }
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &in, std::vector<SequenceResult> &out) override
    {
        const bool oom = int(in.requests.size()) > m_limit;
        int longest = 0;
        for (const Request *r : in.requests)
            longest = std::max(longest, r->maxNewTokens);
        for (int t = 0; t < longest; ++t) {
            if (oom && t == m_failAfter)
                return {StatusCode::ResourceExhausted, "out of memory in decode step " + std::to_string(t)};
            for (std::size_t i = 0; i < in.requests.size(); ++i) {
                const Request &r = *in.requests[i];
                if (t >= r.maxNewTokens)
                    continue;
                const TokenId token = TokenId((r.tokens.front() * 31 + t) % 97); // deterministic
                out[i].tokens.push_back(token);
                if (r.onToken)
                    r.onToken(TokenEvent{r.id, token, t, {}});
            }
        }
        return Status::ok();
    }

private:
    ModelInfo m_info;
    int m_limit, m_failAfter;
};

struct Collected {
    std::vector<Response> responses;
    Completion callback()
    {
        return [this](Response &&r) { responses.push_back(std::move(r)); };
    }
};
} // namespace

class TestOptimizations : public QObject {
    Q_OBJECT
private slots:
    void rateEstimatorFollowsAStep()
    {
        RateEstimator r(100ms);
        TimePoint t = t0;
        for (int i = 0; i < 100; ++i, t += 1ms) // 1000/s for 100 ms
            r.arrival(t);
        for (int i = 0; i < 400; ++i, t += 1ms)
            r.arrival(t);
        QVERIFY(std::abs(r.rate(t) - 1000.0) < 80);
        for (int i = 0; i < 50; ++i, t += 10ms) // then 100/s for 500 ms
            r.arrival(t);
        QVERIFY(std::abs(r.rate(t) - 100.0) < 40);
        QCOMPARE(r.rate(t + 1h), 0.0); // silence
    }

    void adaptiveDelayFollowsAStepInRate()
    {
        BatchingConfig c;
        c.maxBatchSize = 16;
        c.adaptiveDelay.enabled = true;
        c.adaptiveDelay.period = 100ms;
        c.adaptiveDelay.minDelay = 1ms;
        c.adaptiveDelay.maxDelay = 50ms;
        Batcher b(c, ModelLimits{});
        // 2000 req/s: 16 requests take 8 ms to arrive
        TimePoint t = feed(b, t0, 1s, 2000);
        QVERIFY(t != TimePoint{});
        b.poll(t, false);
        QVERIFY2(std::abs(toMicros(b.effectiveDelay()) - 8000) < 1000,
                 qPrintable(QString::number(toMicros(b.effectiveDelay()))));
        // step down to 400 req/s: 40 ms
        t = feed(b, t, 1s, 400);
        b.poll(t, false);
        QVERIFY2(std::abs(toMicros(b.effectiveDelay()) - 40000) < 5000,
                 qPrintable(QString::number(toMicros(b.effectiveDelay()))));
        // and 10 req/s is clamped at the upper bound
        t = feed(b, t, 2s, 20);
        b.poll(t, false);
        QCOMPARE(b.effectiveDelay(), Duration(50ms));
        // the policy uses it: a lone request waits the adaptive delay, not max_queue_delay
        Pending p = make(8, t);
        QVERIFY(b.admit(p, t).isOk());
        QCOMPARE(*b.poll(t, false).wakeAt, t + 50ms);
    }

    void aimdBacksOffAfterAMissAndRecovers()
    {
        BatchingConfig c;
        c.maxBatchSize = 32;
        c.maxQueueDelay = 8ms;
        c.slo.enabled = true;
        c.slo.p99Target = 10ms;
        c.slo.period = 1s;
        c.slo.minBatch = 2;
        c.slo.maxBatch = 64;
        c.slo.batchStep = 4;
        c.slo.delayStep = 1ms;
        SloController ctl;
        QVERIFY(!ctl.evaluate(c, t0));         // starts the first period
        ctl.observe(30ms, 100);                // a miss
        QVERIFY(!ctl.evaluate(c, t0 + 500ms)); // period not over
        auto a = ctl.evaluate(c, t0 + 1s);
        QVERIFY(a);
        QCOMPARE(a->config.maxBatchSize, 16);
        QCOMPARE(a->config.maxQueueDelay, Duration(4ms));
        QVERIFY2(QString::fromStdString(a->reason).contains("> target 10ms"), a->reason.c_str());
        c = a->config;
        ctl.observe(2ms, 100); // recovered: additive increase
        a = ctl.evaluate(c, t0 + 2s);
        QVERIFY(a);
        QCOMPARE(a->config.maxBatchSize, 20);
        QCOMPARE(a->config.maxQueueDelay, Duration(5ms));
        QVERIFY(QString::fromStdString(a->reason).contains("probe up"));
        // too few samples decide nothing; bounds hold
        ctl.observe(2ms, 3);
        QVERIFY(!ctl.evaluate(a->config, t0 + 3s));
        c = a->config;
        c.maxBatchSize = 2;
        ctl.observe(50ms, 100);
        a = ctl.evaluate(c, t0 + 4s);
        QVERIFY(a); // the delay still shrinks
        QCOMPARE(a->config.maxBatchSize, 2);
    }

    void aimdAdjustmentsAreStampedConfigChanges()
    {
        Collected got; // outlives the engine, whose destructor drains into it
        FakeClock clock;
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.clock = &clock;
        o.manualScheduling = true;
        o.batching.maxBatchSize = 8;
        o.batching.maxQueueDelay = 1ms;
        o.batching.slo.enabled = true;
        o.batching.slo.p99Target = 100us;
        o.batching.slo.period = 1s;
        auto engine = Engine::create(o);
        QVERIFY(engine);
        Engine &e = **engine;
        e.runSchedulerOnce(); // the controller's first period starts
        for (int i = 0; i < 40; ++i)
            QVERIFY(e.submit(make(4, {}).request, got.callback()).isOk());
        clock.advance(5ms); // every request waits 5 ms > 100 µs target
        while (e.runSchedulerOnce().dispatched) {
        }
        clock.advance(1s);
        e.runSchedulerOnce();
        const Snapshot s = e.snapshot();
        QCOMPARE(s.config.maxBatchSize, 4);
        const ConfigChange &last = s.configHistory.back();
        QCOMPARE(last.origin, std::string(kSloControllerOrigin));
        QVERIFY2(QString::fromStdString(last.summary).contains("max_batch_size 8→4"), last.summary.c_str());
    }

    void routerPicksTheStaticSizeForTheLoad_data()
    {
        QTest::addColumn<int>("ratePerS");
        QTest::addColumn<int>("length");
        QTest::addColumn<QString>("queue");
        // delay 10 ms: a size fits when size / rate <= 10 ms
        QTest::newRow("1000/s short -> 8") << 1000 << 16 << "static-8";
        QTest::newRow("2000/s short -> 16") << 2000 << 16 << "static-16";
        QTest::newRow("4000/s short -> 32") << 4000 << 16 << "static-32";
        QTest::newRow("4000/s long -> dynamic") << 4000 << 300 << "dynamic";
        QTest::newRow("20/s short (rare) -> dynamic") << 20 << 16 << "dynamic";
        QTest::newRow("400/s short -> smallest") << 400 << 16 << "static-8";
    }
    void routerPicksTheStaticSizeForTheLoad()
    {
        QFETCH(int, ratePerS);
        QFETCH(int, length);
        QFETCH(QString, queue);
        BatchingConfig c;
        c.policy = PolicyKind::Hybrid;
        c.maxQueueDelay = 10ms;
        c.maxBatchSize = 64;
        c.hybrid.staticSizes = {8, 16, 32};
        c.hybrid.maxStaticLength = 128;
        c.hybrid.minStaticRate = 50;
        c.adaptiveDelay.period = 100ms; // the rate estimator's period
        Batcher b(c, ModelLimits{1024, 256});
        TimePoint t = feed(b, t0, 2s, 2 * ratePerS, 300); // long ones: warm the rate estimate
        QVERIFY(t != TimePoint{});
        b.takeAll();
        Pending p = make(length, t);
        QVERIFY(b.admit(p, t).isOk());
        const auto depths = b.depths();
        int q = -1;
        for (std::size_t i = 0; i < depths.size(); ++i)
            if (depths[i])
                q = int(i);
        QCOMPARE(QString::fromStdString(c.queueName(q)), queue);
    }

    void hybridStaticLayerWaitsForItsSize()
    {
        BatchingConfig c;
        c.policy = PolicyKind::Hybrid;
        c.maxQueueDelay = 10ms;
        c.hybrid.staticSizes = {4};
        c.hybrid.minStaticRate = 0;
        c.hybrid.maxStaticLength = 32;
        c.hybrid.staticMaxWait = 100ms;
        c.adaptiveDelay.period = 10ms;
        Batcher b(c, ModelLimits{});
        TimePoint t = t0;
        for (int i = 0; i < 50; ++i, t += 1ms) { // 1000/s warms the estimate
            Pending p = make(8, t);
            QVERIFY(b.admit(p, t).isOk());
        }
        b.takeAll();
        for (int i = 0; i < 3; ++i) {
            Pending p = make(8, t);
            QVERIFY(b.admit(p, t).isOk());
        }
        QVERIFY(!b.poll(t + 50ms, false).batch()); // 3 of 4, before static_max_wait
        Pending p = make(8, t);
        QVERIFY(b.admit(p, t).isOk());
        auto poll = b.poll(t, false);
        QVERIFY(poll.batch());
        QCOMPARE(poll.batch()->reason, DispatchReason::StaticFull);
        QCOMPARE(poll.batch()->paddedLength, 32); // the static layer's fixed shape
    }

    void cacheLruBounds()
    {
        ResponseCache cache;
        cache.configure(2, 1 << 20);
        cache.insert({1}, 0, {{}, {1}});
        cache.insert({2}, 0, {{}, {2}});
        QVERIFY(cache.lookup({1}, 0)); // 1 is now the most recent
        cache.insert({3}, 0, {{}, {3}});
        QVERIFY(!cache.lookup({2}, 0)); // evicted
        QVERIFY(cache.lookup({1}, 0));
        QVERIFY(!cache.lookup({1}, 5)); // other generation parameters
        const CacheStats s = cache.stats();
        QCOMPARE(s.entries, std::uint64_t(2));
        QCOMPARE(s.evictions, std::uint64_t(1));
        cache.configure(100, 1024); // bytes bound
        for (int i = 0; i < 100; ++i)
            cache.insert(std::vector<TokenId>(16, i), 0, {std::vector<float>(8), {}});
        QVERIFY(cache.stats().bytes <= 1024);
    }

    void cacheHitSkipsTheModel()
    {
        Collected got; // outlives the engine, whose destructor drains into it
        FakeClock clock;
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.clock = &clock;
        o.manualScheduling = true;
        o.batching.policy = PolicyKind::None;
        o.batching.cache.enabled = true;
        auto engine = Engine::create(o);
        Engine &e = **engine;
        Request r;
        r.tokens = {5, 6, 7};
        r.maxNewTokens = 2;
        QVERIFY(e.submit(r, got.callback()).isOk());
        QVERIFY(e.runSchedulerOnce().dispatched);
        QCOMPARE(got.responses.size(), std::size_t(1));
        QVERIFY(!got.responses[0].cacheHit);
        QVERIFY(e.submit(r, got.callback()).isOk()); // answered inside submit
        QCOMPARE(got.responses.size(), std::size_t(2));
        QVERIFY(got.responses[1].cacheHit);
        QCOMPARE(got.responses[1].batch.reason, DispatchReason::CacheHit);
        QCOMPARE(got.responses[1].tokens, got.responses[0].tokens);
        QCOMPARE(e.queueDepth(), std::size_t(0));
        r.maxNewTokens = 3; // different generation parameters: a miss
        QVERIFY(e.submit(r, got.callback()).isOk());
        QCOMPARE(e.queueDepth(), std::size_t(1));
        const Snapshot s = e.snapshot();
        QCOMPARE(s.cache.hits, std::uint64_t(1));
        QCOMPARE(s.cache.misses, std::uint64_t(2));
        QCOMPARE(s.cacheHits, std::uint64_t(1));
        BatchingConfig off = e.config();
        off.cache.enabled = false; // switched off live: empties it
        QVERIFY(e.reconfigure(off).isOk());
        r.maxNewTokens = 2;
        QVERIFY(e.submit(r, got.callback()).isOk());
        QCOMPARE(e.queueDepth(), std::size_t(2));
    }

    void outOfMemorySplitsAndLowersTheLimit()
    {
        Collected got; // outlives the engine, whose destructor drains into it
        FakeClock clock;
        auto backend = std::make_shared<SmallMemoryBackend>(4);
        EngineOptions o;
        o.backend = backend;
        o.clock = &clock;
        o.manualScheduling = true;
        o.probeMemory = false; // find the limit the hard way
        o.batching.maxBatchSize = 16;
        o.batching.maxQueueDelay = 1ms;
        auto engine = Engine::create(o);
        Engine &e = **engine;
        for (int i = 0; i < 16; ++i)
            QVERIFY(e.submit(make(4, {}).request, got.callback()).isOk());
        QVERIFY(e.runSchedulerOnce().dispatched);
        QCOMPARE(got.responses.size(), std::size_t(16));
        for (const Response &r : got.responses)
            QVERIFY2(r.status.isOk(), r.status.toString().c_str());
        QCOMPARE(backend->sizes, (std::vector<int>{16, 8, 4, 4, 8, 4, 4}));
        Snapshot s = e.snapshot();
        QCOMPARE(s.config.memoryBatchLimit, 4);
        QCOMPARE(s.configHistory.back().origin, std::string(kMemoryGuardOrigin));
        QCOMPARE(s.recentBatches.back().oomSplits, 3);
        // the next batches respect the limit
        for (int i = 0; i < 10; ++i)
            QVERIFY(e.submit(make(4, {}).request, got.callback()).isOk());
        backend->sizes.clear();
        while (e.runSchedulerOnce().dispatched) {
        }
        QCOMPARE(backend->sizes, (std::vector<int>{4, 4}));
    }

    // The memory guard retries the halves of a batch that ran out of memory
    // mid-generation; a streaming client must still see every token once,
    // in order (the retry regenerates the tokens it already has).
    void outOfMemoryRetryDoesNotRepeatStreamedTokens()
    {
        std::map<std::uint64_t, std::vector<TokenEvent>> events;
        Collected got;
        FakeClock clock;
        EngineOptions o;
        o.backend = std::make_shared<StreamingSmallMemoryBackend>(2, 3);
        o.clock = &clock;
        o.manualScheduling = true;
        o.probeMemory = false;
        o.batching.maxBatchSize = 8;
        o.batching.maxQueueDelay = 1ms;
        auto engine = Engine::create(o);
        QVERIFY(engine.isOk());
        Engine &e = **engine;
        for (std::uint64_t id = 1; id <= 8; ++id) {
            Request r = make(4, {}).request;
            r.id = id;
            r.tokens.front() = TokenId(id);
            r.maxNewTokens = 6;
            r.onToken = [&events](const TokenEvent &ev) { events[ev.requestId].push_back(ev); };
            QVERIFY(e.submit(std::move(r), got.callback()).isOk());
        }
        QVERIFY(e.runSchedulerOnce().dispatched);
        QCOMPARE(got.responses.size(), std::size_t(8));
        QVERIFY(e.snapshot().recentBatches.back().oomSplits > 0);
        for (const Response &r : got.responses) {
            QVERIFY2(r.status.isOk(), r.status.toString().c_str());
            const std::vector<TokenEvent> &ev = events[r.requestId];
            QCOMPARE(ev.size(), r.tokens.size()); // each token reported once
            for (std::size_t k = 0; k < ev.size(); ++k) {
                QCOMPARE(ev[k].index, int(k));
                QCOMPARE(ev[k].token, r.tokens[k]);
            }
        }
    }

    void startupProbeSetsTheMemoryLimit()
    {
        EngineOptions o;
        o.backend = std::make_shared<SmallMemoryBackend>(6);
        o.manualScheduling = true;
        o.batching.maxBatchSize = 32;
        auto engine = Engine::create(o);
        QVERIFY(engine);
        QCOMPARE((*engine)->config().memoryBatchLimit, 4);
        o.probeMemory = false;
        auto unprobed = Engine::create(o);
        QCOMPARE((*unprobed)->config().memoryBatchLimit, 0);
    }

    void prioritiesFirstWithoutStarvation()
    {
        BatchingConfig c;
        c.maxBatchSize = 2;
        c.maxQueueDelay = 0ms;
        c.priorityAging = 100ms;
        Batcher b(c, ModelLimits{});
        Pending low = make(4, t0, 0, 1);
        QVERIFY(b.admit(low, t0).isOk());
        // A stream of high-priority requests that alone fills every batch:
        // without aging the low one would wait forever.
        std::uint64_t nextId = 2;
        std::optional<Duration> lowLeftAfter;
        for (TimePoint t = t0 + 10ms; t <= t0 + 1s && !lowLeftAfter; t += 10ms) {
            for (int i = 0; i < 2; ++i) {
                Pending high = make(4, t, 1, nextId++);
                QVERIFY(b.admit(high, t).isOk());
            }
            auto poll = b.poll(t, false);
            QVERIFY(poll.batch());
            for (const auto &p : poll.batch()->items) {
                if (p.request.id == 1)
                    lowLeftAfter = t - t0;
                else
                    QCOMPARE(p.request.priority, 1);
            }
        }
        // Higher priority first: the low one waits while it is behind by a
        // whole priority step; aging bounds that wait to (1 + 1) × 100 ms.
        QVERIFY(lowLeftAfter);
        QVERIFY2(*lowLeftAfter >= 100ms && *lowLeftAfter <= 200ms,
                 qPrintable(QString::number(toMicros(*lowLeftAfter))));
    }
};

QTEST_APPLESS_MAIN(TestOptimizations)
#include "test_optimizations.moc"
