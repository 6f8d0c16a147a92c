// The threaded engine: scheduling on a fake clock (manual scheduling), the
// exactly-one-completion invariant under concurrent submitters, live
// reconfiguration, shutdown modes and backend failures.
#include "engine/engine.h"

#include <QtTest>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

using namespace bp;
using namespace std::chrono_literals;

namespace {

// Collects completions; tests wait on a condition, never sleep.
class Collector {
public:
    Completion callback()
    {
        return [this](Response &&r) {
            std::lock_guard lock(m_mutex);
            m_responses.push_back(std::move(r));
            m_cv.notify_all();
        };
    }
    bool waitFor(std::size_t n, std::chrono::seconds timeout = 20s)
    {
        std::unique_lock lock(m_mutex);
        return m_cv.wait_for(lock, timeout, [&] { return m_responses.size() >= n; });
    }
    std::vector<Response> responses()
    {
        std::lock_guard lock(m_mutex);
        return m_responses;
    }

private:
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::vector<Response> m_responses;
};

Request req(int length, int maxNew = 0)
{
    Request r;
    r.tokens.assign(std::size_t(length), 1);
    r.maxNewTokens = maxNew;
    return r;
}

class ThrowingBackend : public Backend {
public:
    ThrowingBackend() { m_info.name = "test:throwing"; }
    ModelInfo m_info;
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &in, std::vector<SequenceResult> &) override
    {
        if (in.requests.size() > 1)
            throw std::runtime_error("boom on a batch of " + std::to_string(in.requests.size()));
        return Status::ok();
    }
};

} // namespace

class TestEngine : public QObject {
    Q_OBJECT
private slots:
    void fakeClockDelayDispatch()
    {
        FakeClock clock;
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.clock = &clock;
        o.manualScheduling = true;
        o.batching.maxBatchSize = 4;
        o.batching.maxQueueDelay = 10ms;
        auto engine = Engine::create(o);
        QVERIFY(engine);
        Collector c;
        for (int i = 0; i < 3; ++i)
            QVERIFY((*engine)->submit(req(5 + i), c.callback()).isOk());
        Engine::Step step = (*engine)->runSchedulerOnce();
        QVERIFY(!step.dispatched);
        QCOMPARE(*step.wakeAt, clock.now() + 10ms);
        clock.advance(10ms);
        step = (*engine)->runSchedulerOnce();
        QVERIFY(step.dispatched);
        QVERIFY(c.waitFor(3));
        for (const Response &r : c.responses()) {
            QVERIFY(r.status.isOk());
            QCOMPARE(r.batch.size, 3);
            QCOMPARE(r.batch.paddedLength, 7);
            QCOMPARE(r.batch.reason, DispatchReason::DelayExpired);
            QCOMPARE(r.timing.queueWait, Duration(10ms)); // exact: the clock is fake
            QCOMPARE(r.tokens.size(), std::size_t(r.requestId + 4)); // echo of the input
        }
        const Snapshot s = (*engine)->snapshot();
        QCOMPARE(s.completed, std::uint64_t(3));
        QCOMPARE(s.batches, std::uint64_t(1));
        QCOMPARE(s.batchSizeCounts[3], std::uint64_t(1));
        QCOMPARE(s.paddingEfficiency, 18.0 / 21.0);
    }

    void fakeClockFullDispatchAndDeadline()
    {
        FakeClock clock;
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.clock = &clock;
        o.manualScheduling = true;
        o.batching.maxBatchSize = 2;
        o.batching.maxQueueDelay = 1s;
        auto engine = Engine::create(o);
        Collector c;
        Request dl = req(3);
        dl.deadline = clock.now() + 5ms;
        QVERIFY((*engine)->submit(dl, c.callback()).isOk());
        clock.advance(6ms);
        Engine::Step step = (*engine)->runSchedulerOnce();
        QCOMPARE(step.expired, std::size_t(1));
        QVERIFY(c.waitFor(1));
        QCOMPARE(c.responses()[0].status.code(), StatusCode::DeadlineExceeded);

        QVERIFY((*engine)->submit(req(3), c.callback()).isOk());
        QVERIFY((*engine)->submit(req(3), c.callback()).isOk());
        QVERIFY((*engine)->runSchedulerOnce().dispatched);
        QVERIFY(c.waitFor(3));
        QCOMPARE(c.responses()[1].batch.reason, DispatchReason::Full);
        QCOMPARE(c.responses()[1].timing.queueWait, Duration::zero());
    }

    void reconfigureValidatesAndStamps()
    {
        FakeClock clock;
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.clock = &clock;
        o.manualScheduling = true;
        auto engine = Engine::create(o);
        BatchingConfig bad = (*engine)->config();
        bad.maxBatchSize = 0;
        Status s = (*engine)->reconfigure(bad, "test");
        QCOMPARE(s.code(), StatusCode::InvalidArgument);
        QVERIFY(QString::fromStdString(s.message()).contains("max_batch_size"));
        QCOMPARE((*engine)->config().maxBatchSize, BatchingConfig{}.maxBatchSize);

        clock.advance(2s);
        BatchingConfig good = (*engine)->config();
        good.maxBatchSize = 32;
        good.policy = PolicyKind::Bucketed;
        QVERIFY((*engine)->reconfigure(good, "test").isOk());
        const Snapshot snap = (*engine)->snapshot();
        QCOMPARE(snap.configVersion, std::uint64_t(2));
        QCOMPARE(snap.configHistory.size(), std::size_t(2));
        QCOMPARE(snap.configHistory[1].at, clock.now());
        QCOMPARE(snap.configHistory[1].origin, std::string("test"));
        QCOMPARE(QString::fromStdString(snap.configHistory[1].summary),
                 QString("policy dynamic→bucketed, max_batch_size 16→32"));
        // the same config again is not a change
        QVERIFY((*engine)->reconfigure(good, "test").isOk());
        QCOMPARE((*engine)->snapshot().configHistory.size(), std::size_t(2));
    }

    void shutdownFailFailsQueued()
    {
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.batching.policy = PolicyKind::Static;
        o.batching.staticBatchSize = 8;
        auto engine = Engine::create(o);
        Collector c;
        for (int i = 0; i < 3; ++i)
            QVERIFY((*engine)->submit(req(4), c.callback()).isOk());
        (*engine)->shutdown(ShutdownMode::Fail);
        QVERIFY(c.waitFor(3, 1s));
        for (const Response &r : c.responses())
            QCOMPARE(r.status.code(), StatusCode::ShuttingDown);
        QCOMPARE((*engine)->submit(req(4), c.callback()).code(), StatusCode::ShuttingDown);
    }

    void shutdownDrainStatic_data()
    {
        QTest::addColumn<bool>("flush");
        QTest::newRow("flush partial") << true;
        QTest::newRow("fail partial") << false;
    }
    void shutdownDrainStatic()
    {
        QFETCH(bool, flush);
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.batching.policy = PolicyKind::Static;
        o.batching.staticBatchSize = 8;
        o.batching.staticFlushOnDrain = flush;
        auto engine = Engine::create(o);
        Collector c;
        for (int i = 0; i < 3; ++i)
            QVERIFY((*engine)->submit(req(4), c.callback()).isOk());
        (*engine)->shutdown(ShutdownMode::Drain);
        QVERIFY(c.waitFor(3, 1s));
        for (const Response &r : c.responses()) {
            if (flush) {
                QVERIFY(r.status.isOk());
                QCOMPARE(r.batch.reason, DispatchReason::Drain);
                QCOMPARE(r.batch.size, 3);
            } else {
                QCOMPARE(r.status.code(), StatusCode::ShuttingDown);
            }
        }
    }

    void backendExceptionFailsBatchEngineSurvives()
    {
        EngineOptions o;
        o.backend = std::make_shared<ThrowingBackend>();
        o.batching.policy = PolicyKind::Static;
        o.batching.staticBatchSize = 2;
        auto engine = Engine::create(o);
        Collector c;
        QVERIFY((*engine)->submit(req(4), c.callback()).isOk());
        QVERIFY((*engine)->submit(req(4), c.callback()).isOk());
        QVERIFY(c.waitFor(2));
        for (const Response &r : c.responses()) {
            QCOMPARE(r.status.code(), StatusCode::Internal);
            QVERIFY(QString::fromStdString(r.status.message()).contains("boom on a batch of 2"));
        }
        BatchingConfig none = (*engine)->config();
        none.policy = PolicyKind::None;
        QVERIFY((*engine)->reconfigure(none).isOk());
        QVERIFY((*engine)->submit(req(4), c.callback()).isOk());
        QVERIFY(c.waitFor(3));
        QVERIFY(c.responses()[2].status.isOk());
    }

    // Many submitters, a small queue, deadlines, live reconfiguration of the
    // policy and the instance count: every accepted request completes exactly
    // once, every rejected one never. Also run under the tsan preset.
    void exactlyOneCompletionUnderConcurrency()
    {
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.batching.queueCapacity = 64;
        o.batching.maxBatchSize = 8;
        o.batching.maxQueueDelay = 200us;
        o.batching.instances = 2;
        auto created = Engine::create(o);
        QVERIFY(created);
        Engine &engine = **created;

        constexpr int kThreads = 4;
        constexpr int kPerThread = 3000;
        std::vector<std::atomic<int>> calls(kThreads * kPerThread + 1);
        std::vector<std::atomic<int>> accepted(kThreads * kPerThread + 1);
        std::atomic<int> completions{0};
        std::atomic<bool> stopReconfig{false};
        std::atomic<int> wrongIds{0}, failedReconfigs{0}; // QTest macros are not thread-safe

        std::thread reconfigurer([&] {
            const PolicyKind kinds[] = {PolicyKind::Bucketed, PolicyKind::None, PolicyKind::Static,
                                        PolicyKind::Dynamic};
            int i = 0;
            while (!stopReconfig.load()) {
                BatchingConfig c = engine.config();
                c.policy = kinds[i % 4];
                c.staticBatchSize = 1 + i % 5;
                c.staticPaddedLength = 64;
                c.instances = 1 + i % 3;
                c.bucketEdges = i % 2 ? std::vector<int>{4, 16} : std::vector<int>{8, 32, 48};
                if (!engine.reconfigure(c, "test").isOk())
                    failedReconfigs.fetch_add(1);
                ++i;
                std::this_thread::yield();
            }
        });
        std::vector<std::thread> producers;
        for (int t = 0; t < kThreads; ++t) {
            producers.emplace_back([&, t] {
                std::mt19937 rng{static_cast<unsigned>(t)};
                for (int i = 0; i < kPerThread; ++i) {
                    const int id = t * kPerThread + i + 1;
                    Request r = req(1 + int(rng() % 60));
                    r.id = std::uint64_t(id);
                    if (rng() % 10 == 0)
                        r.deadline = SteadyClock::now() + std::chrono::microseconds(rng() % 300);
                    Status s = engine.submit(std::move(r), [&, id](Response &&resp) {
                        if (resp.requestId != std::uint64_t(id))
                            wrongIds.fetch_add(1);
                        calls[std::size_t(id)].fetch_add(1);
                        completions.fetch_add(1);
                    });
                    if (s.isOk())
                        accepted[std::size_t(id)] = 1;
                    else if (s.code() == StatusCode::QueueFull)
                        std::this_thread::yield();
                }
            });
        }
        for (auto &p : producers)
            p.join();
        stopReconfig = true;
        reconfigurer.join();
        engine.shutdown(ShutdownMode::Drain);

        QCOMPARE(wrongIds.load(), 0);
        QCOMPARE(failedReconfigs.load(), 0);
        int acceptedCount = 0;
        for (std::size_t id = 1; id < calls.size(); ++id) {
            QCOMPARE(calls[id].load(), accepted[id].load());
            acceptedCount += accepted[id].load();
        }
        QVERIFY(acceptedCount > 0);
        QCOMPARE(completions.load(), acceptedCount);
        const Snapshot s = engine.snapshot();
        std::uint64_t finals = 0;
        for (auto n : s.byStatus)
            finals += n;
        QCOMPARE(finals, std::uint64_t(kThreads * kPerThread)); // rejects are counted too
        QCOMPARE(s.submitted, std::uint64_t(acceptedCount));
        QCOMPARE(s.queueDepth, std::size_t(0));
    }
};

QTEST_APPLESS_MAIN(TestEngine)
#include "test_engine.moc"
