// The threaded engine: scheduling on a fake clock (manual scheduling), the
// exactly-one-completion invariant under concurrent submitters, live
// reconfiguration, shutdown modes and backend failures.
#include "engine/exec/engine.h"
#include "engine/store/trace_sink.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <set>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <ctime>

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

double processCpuSeconds()
{
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
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

struct NonStandardError {
    int code = 7;
};

// Batches larger than `oomAbove` fail as out of memory (the split path);
// the rest throw `std::logic_error` or, with `foreign`, a type that is not a
// std::exception.
class ForeignThrowingBackend : public Backend {
public:
    ForeignThrowingBackend(int oomAbove, bool foreign) : m_oomAbove(oomAbove), m_foreign(foreign)
    {
        m_info.name = "test:foreign-throwing";
    }
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &in, std::vector<SequenceResult> &) override
    {
        if (int(in.requests.size()) > m_oomAbove)
            throw std::runtime_error("CUDA out of memory");
        if (m_foreign)
            throw NonStandardError{};
        throw std::logic_error("a standard failure");
    }

private:
    ModelInfo m_info;
    int m_oomAbove;
    bool m_foreign;
};

// Counts every callback, then throws (a std::exception or, every other
// call, an int): the engine must neither die nor lose a completion.
class ThrowingObserver : public EngineObserver {
public:
    std::atomic<int> batches{0}, failed{0}, cached{0}, configs{0};
    void onBatchCompleted(const BatchRecord &, std::span<const RequestRecord>) override { raise(batches); }
    void onRequestFailed(const RequestRecord &) override { raise(failed); }
    void onRequestServedFromCache(const RequestRecord &) override { raise(cached); }
    void onConfigChanged(const ConfigChange &) override { raise(configs); }

private:
    void raise(std::atomic<int> &counter)
    {
        if (counter.fetch_add(1) % 2)
            throw 42;
        throw std::runtime_error("observer bug");
    }
};

class CountingObserver : public EngineObserver {
public:
    std::atomic<int> batches{0}, failed{0}, cached{0}, configs{0};
    void onBatchCompleted(const BatchRecord &, std::span<const RequestRecord>) override { ++batches; }
    void onRequestFailed(const RequestRecord &) override { ++failed; }
    void onRequestServedFromCache(const RequestRecord &) override { ++cached; }
    void onConfigChanged(const ConfigChange &) override { ++configs; }
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
            QCOMPARE(r.timing.queueWait, Duration(10ms));            // exact: the clock is fake
            QCOMPARE(r.tokens.size(), std::size_t(r.requestId + 4)); // echo of the input
        }
        const Snapshot s = (*engine)->snapshot();
        QCOMPARE(s.completed, std::uint64_t(3));
        QCOMPARE(s.batches, std::uint64_t(1));
        QCOMPARE(s.batchSizeCounts[3], std::uint64_t(1));
        QCOMPARE(s.paddingEfficiency, 18.0 / 21.0);
    }

    // What an observer (the trace sink) records of a request carries its
    // priority and its queue, and unit ids go on across a switch to another
    // kind of scheduler (they once restarted at 1, and a session's rows
    // shared ids).
    void recordsCarryPriorityAndUnitIdsStayUnique()
    {
        struct Records final : EngineObserver {
            std::vector<BatchRecord> batches;
            std::vector<RequestRecord> requests;
            void onBatchCompleted(const BatchRecord &b, std::span<const RequestRecord> rs) override
            {
                batches.push_back(b);
                requests.insert(requests.end(), rs.begin(), rs.end());
            }
        };
        FakeClock clock;
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.clock = &clock;
        o.manualScheduling = true;
        o.batching.policy = PolicyKind::Bucketed;
        o.batching.bucketEdges = {4, 1024};
        auto engine = Engine::create(o);
        QVERIFY(engine);
        auto records = std::make_shared<Records>();
        (*engine)->addObserver(records);
        Collector c;
        Request high = req(8);
        high.priority = 5;
        QVERIFY((*engine)->submit(std::move(high), c.callback()).isOk());
        while ((*engine)->runSchedulerOnce().dispatched || (*engine)->queueDepth() > 0)
            clock.advance(1ms);
        BatchingConfig continuous = (*engine)->config();
        continuous.policy = PolicyKind::Continuous;
        QVERIFY((*engine)->reconfigure(continuous).isOk());
        QVERIFY((*engine)->submit(req(3, 2), c.callback()).isOk());
        while ((*engine)->queueDepth() > 0) {
            (*engine)->runSchedulerOnce();
            clock.advance(1ms);
        }
        QVERIFY(c.waitFor(2));
        QCOMPARE(records->requests.front().priority, 5);
        QCOMPARE(records->requests.front().bucket, 1);
        std::set<std::uint64_t> ids;
        for (const BatchRecord &b : records->batches)
            QVERIFY2(ids.insert(b.id).second, qPrintable(QString("unit id %1 twice").arg(b.id)));
        QVERIFY(records->batches.size() >= 3); // the batch and at least two steps
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

    // Regression: after one request with a deadline left by dispatch, the
    // leader kept the stale deadline as its wake-up time and spun on it for
    // ever (~65% of a core on an idle process). It must end in an untimed
    // wait, and the idle process must use next to no CPU.
    void idleAfterDeadlineTrafficSleeps()
    {
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.batching.maxQueueDelay = 1ms;
        auto engine = Engine::create(o);
        QVERIFY(engine);
        Collector c;
        Request r = req(4);
        r.deadline = SteadyClock::now() + 50ms; // leaves by dispatch after ~1 ms
        QVERIFY((*engine)->submit(r, c.callback()).isOk());
        QVERIFY(c.waitFor(1));
        QVERIFY(c.responses()[0].status.isOk());
        QTRY_VERIFY2_WITH_TIMEOUT(
            (*engine)->schedulerIdle(),
            "the scheduling thread never went to sleep: it is still waking up for a deadline "
            "that left",
            20000);
        // A resource check, not a latency assertion: the bound is ~10x what
        // a busy machine's noise could add, and ~3x below the spinning bug.
        const double cpu0 = processCpuSeconds();
        const TimePoint wall0 = SteadyClock::now();
        std::this_thread::sleep_for(300ms); // the interval measured
        const double used = processCpuSeconds() - cpu0;
        const double wall = toSeconds(SteadyClock::now() - wall0);
        QVERIFY2(used < 0.25 * wall,
                 qPrintable(QString("idle engine used %1 s of CPU in %2 s").arg(used).arg(wall)));
        QVERIFY((*engine)->schedulerIdle());
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

    // snapshot() once copied up to 1,000 history entries under the
    // engine mutex ten times a second. The history is now shared in
    // immutable chunks; it must still read as a bounded, ordered value that
    // keeps the initial entry and never changes once taken.
    void configHistoryIsABoundedSharedValue()
    {
        FakeClock clock;
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.clock = &clock;
        o.manualScheduling = true;
        auto engine = Engine::create(o);
        QVERIFY(engine);
        BatchingConfig c = (*engine)->config();
        for (int i = 0; i < 100; ++i) {
            c.maxBatchSize = 1 + i % 2;
            QVERIFY((*engine)->reconfigure(c, "test").isOk());
        }
        const Snapshot early = (*engine)->snapshot();
        QCOMPARE(early.configHistory.size(), std::size_t(101));
        for (int i = 0; i < 2000; ++i) {
            c.maxBatchSize = 1 + i % 2;
            QVERIFY((*engine)->reconfigure(c, "test").isOk());
        }
        const Snapshot late = (*engine)->snapshot();
        QVERIFY(late.configHistory.size() <= ConfigHistory::kMaxEntries);
        QVERIFY(late.configHistory.size() > ConfigHistory::kMaxEntries - ConfigHistory::kChunk);
        QCOMPARE(late.configHistory.front().version, std::uint64_t(1)); // the initial config stays
        QCOMPARE(late.configHistory.back().version, late.configVersion);
        std::uint64_t previous = 0;
        std::size_t n = 0;
        for (const ConfigChange &change : late.configHistory) {
            QVERIFY(change.version > previous);
            QCOMPARE(late.configHistory[n].version, change.version);
            previous = change.version;
            ++n;
        }
        QCOMPARE(n, late.configHistory.size());
        // the earlier value did not move
        QCOMPARE(early.configHistory.size(), std::size_t(101));
        QCOMPARE(early.configHistory.back().version, std::uint64_t(101));
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

    // Regression: a backend that throws something that is not a
    // std::exception (or throws while the out-of-memory split retries the
    // halves) ended the process. Every request must get exactly one
    // completion, with status internal.
    void backendThrowingAnythingFailsOnlyTheBatch_data()
    {
        QTest::addColumn<int>("oomAbove");
        QTest::addColumn<bool>("foreign");
        QTest::newRow("non-std, whole batch") << 1000 << true;
        QTest::newRow("non-std, during the OOM split") << 1 << true;
        QTest::newRow("std, during the OOM split") << 1 << false;
    }
    void backendThrowingAnythingFailsOnlyTheBatch()
    {
        QFETCH(int, oomAbove);
        QFETCH(bool, foreign);
        FakeClock clock;
        EngineOptions o;
        o.backend = std::make_shared<ForeignThrowingBackend>(oomAbove, foreign);
        o.clock = &clock;
        o.manualScheduling = true;
        o.batching.policy = PolicyKind::Static;
        o.batching.staticBatchSize = 4;
        auto engine = Engine::create(o);
        QVERIFY(engine);
        std::map<std::uint64_t, int> calls;
        std::vector<Response> responses;
        for (int i = 0; i < 4; ++i)
            QVERIFY((*engine)
                        ->submit(req(3),
                                 [&](Response &&r) {
                                     ++calls[r.requestId];
                                     responses.push_back(std::move(r));
                                 })
                        .isOk());
        QVERIFY((*engine)->runSchedulerOnce().dispatched);
        QCOMPARE(calls.size(), std::size_t(4));
        for (const auto &[id, n] : calls)
            QCOMPARE(n, 1);
        for (const Response &r : responses) {
            QCOMPARE(r.status.code(), StatusCode::Internal);
            QVERIFY(QString::fromStdString(r.status.message())
                        .contains(foreign ? "non-standard" : "standard failure"));
        }
        const Snapshot s = (*engine)->snapshot();
        QCOMPARE(s.byStatus[std::size_t(StatusCode::Internal)], std::uint64_t(4));
        QCOMPARE(s.recentBatches.back().oomSplits, oomAbove < 4 ? 3 : 0); // 4 -> 2+2 -> 1+1+1+1
    }

    // Observers are someone else's code; one that throws from
    // any callback must not end the process, lose a completion or keep the
    // observers after it from running.
    void throwingObserverLosesNothing()
    {
        FakeClock clock;
        EngineOptions o;
        o.backend = makeEchoBackend();
        o.clock = &clock;
        o.manualScheduling = true;
        o.batching.policy = PolicyKind::None;
        o.batching.cache.enabled = true;
        auto engine = Engine::create(o);
        QVERIFY(engine);
        auto thrower = std::make_shared<ThrowingObserver>();
        auto counter = std::make_shared<CountingObserver>();
        (*engine)->addObserver(thrower);
        (*engine)->addObserver(counter);
        std::map<std::uint64_t, int> calls;
        auto done = [&](Response &&r) { ++calls[r.requestId]; };

        QVERIFY((*engine)->submit(req(5), done).isOk());
        QVERIFY((*engine)->runSchedulerOnce().dispatched); // onBatchCompleted throws
        QVERIFY((*engine)->submit(req(5), done).isOk());   // a cache hit: answered inside submit
        QCOMPARE((*engine)->submit(req(0), done).code(), StatusCode::InvalidArgument); // onRequestFailed
        Request late = req(3);
        late.deadline = clock.now() + 1ms;
        QVERIFY((*engine)->submit(late, done).isOk());
        clock.advance(2ms);
        QCOMPARE((*engine)->runSchedulerOnce().expired, std::size_t(1)); // onRequestFailed on expiry
        BatchingConfig c = (*engine)->config();
        c.maxBatchSize = 3;
        QVERIFY((*engine)->reconfigure(c, "test").isOk()); // onConfigChanged
        QVERIFY((*engine)->submit(req(7), done).isOk());
        QVERIFY((*engine)->runSchedulerOnce().dispatched); // still serving

        QCOMPARE(calls.size(), std::size_t(4)); // the rejected one never completes
        for (const auto &[id, n] : calls)
            QCOMPARE(n, 1);
        QCOMPARE(thrower->batches.load(), 2);
        QCOMPARE(thrower->cached.load(), 1);
        QCOMPARE(thrower->failed.load(), 2);
        QCOMPARE(thrower->configs.load(), 1);
        // the observer after the thrower saw everything too
        QCOMPARE(counter->batches.load(), 2);
        QCOMPARE(counter->cached.load(), 1);
        QCOMPARE(counter->failed.load(), 2);
        QCOMPARE(counter->configs.load(), 1);
    }

    // Many submitters, a small queue, deadlines, live reconfiguration of the
    // policy and the instance count, and the real trace sink attached (as
    // whenever the store is on): every accepted request completes exactly
    // once, every rejected one never. Run under the tsan preset too, where it
    // showed a race: Engine::fail read the batcher's config for the
    // observers without the engine mutex while reconfigure replaced it.
    void exactlyOneCompletionUnderConcurrency()
    {
        QTemporaryDir dir;
        const std::string dbPath = dir.filePath("stress.sqlite").toStdString();
        auto store = TraceStore::open(dbPath);
        QVERIFY(store);
        auto sessionId = (*store)->startSession({});
        QVERIFY(sessionId);
        auto sink = TraceSink::create(dbPath, *sessionId, SteadyClock::now());
        QVERIFY(sink);
        (*sink)->start();

        EngineOptions o;
        o.backend = makeEchoBackend();
        o.batching.queueCapacity = 64;
        o.batching.maxBatchSize = 8;
        o.batching.maxQueueDelay = 200us;
        o.batching.instances = 2;
        auto created = Engine::create(o);
        QVERIFY(created);
        Engine &engine = **created;
        engine.addObserver(*sink);

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
        // The sink saw every change: config rows are never dropped.
        QVERIFY((*sink)->flush());
        (*sink)->stop();
        QCOMPARE((*store)->configHistory(*sessionId)->size(), std::size_t(s.configVersion - 1));
    }
};

QTEST_APPLESS_MAIN(TestEngine)
#include "test_engine.moc"
