// The scheduler seam and the pieces the Engine was split into:
// the out-of-memory matcher, the memory guard decorator,
// config versions, record/response building, the interceptors, and an
// Engine driven through the seam on a fake clock.
#include "engine/config/config_versions.h"
#include "engine/core/out_of_memory.h"
#include "engine/exec/engine.h"
#include "engine/exec/interceptors.h"
#include "engine/exec/memory_guard.h"
#include "engine/sched/outcome.h"
#include "engine/sched/batcher.h"
#include "engine/sched/scheduler.h"

#include <QtTest>

#include <stdexcept>

using namespace bp;
using namespace std::chrono_literals;

namespace {
const TimePoint t0 = TimePoint(1000s);

Request request(int length, TimePoint arrival, std::uint64_t id = 1)
{
    Request r;
    r.id = id;
    r.tokens.assign(std::size_t(length), 3);
    r.arrival = arrival;
    return r;
}

// Throws `message` (as a std::runtime_error) for any batch larger than
// `fits`; records every batch size it was asked to run.
class ThrowingBackend final : public Backend {
public:
    ThrowingBackend(std::size_t fits, std::string message) : m_fits(fits), m_message(std::move(message))
    {
        m_info.name = "test:throwing";
    }
    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        sizes.push_back(int(input.requests.size()));
        if (input.requests.size() > m_fits)
            throw std::runtime_error(m_message);
        for (std::size_t i = 0; i < out.size(); ++i)
            out[i].values = {float(input.requests[i]->id)};
        return Status::ok();
    }
    std::vector<int> sizes;

private:
    ModelInfo m_info;
    std::size_t m_fits;
    std::string m_message;
};
} // namespace

class TestSeam : public QObject {
    Q_OBJECT
private slots:
    // One matcher for engine/ and engine/torch/. Each row
    // is a message one of the two old matchers got wrong, or a control.
    void outOfMemoryMatcher_data()
    {
        QTest::addColumn<QString>("what");
        QTest::addColumn<bool>("oom");
        QTest::newRow("cuda") << "CUDA out of memory. Tried to allocate 2.00 GiB" << true;
        QTest::newRow("c10 caching allocator") << "C10 Out of Memory. Trying to allocate 1234 bytes" << true;
        QTest::newRow("cpu allocator linux")
            << "DefaultCPUAllocator: can't allocate memory: you tried to allocate 80000000000 bytes" << true;
        QTest::newRow("cpu allocator other")
            << "DefaultCPUAllocator: not enough memory: you tried to allocate 80000000000 bytes" << true;
        QTest::newRow("sizes and strides") << "Could not allocate memory for Tensor SizesAndStrides!" << true;
        QTest::newRow("bad_alloc") << "std::bad_alloc" << true;
        QTest::newRow("strerror ENOMEM") << "mmap: Cannot allocate memory" << true;
        QTest::newRow("shape error") << "mat1 and mat2 shapes cannot be multiplied (4x8 and 16x8)" << false;
        QTest::newRow("device error") << "Expected all tensors to be on the same device" << false;
        QTest::newRow("empty") << "" << false;
    }
    void outOfMemoryMatcher()
    {
        QFETCH(QString, what);
        QFETCH(bool, oom);
        QCOMPARE(looksLikeOutOfMemory(what.toStdString()), oom);
    }

    // The guard splits on an out-of-memory exception in any of the spellings
    // (the engine's old matcher, case-sensitive, failed "C10 Out of Memory"
    // batches as Internal instead of retrying them in halves).
    void memoryGuardSplitsOnEverySpelling_data()
    {
        QTest::addColumn<QString>("message");
        QTest::newRow("c10") << "C10 Out of Memory. Trying to allocate 1234 bytes";
        QTest::newRow("cpu allocator")
            << "DefaultCPUAllocator: not enough memory: you tried to allocate 8 bytes";
    }
    void memoryGuardSplitsOnEverySpelling()
    {
        QFETCH(QString, message);
        auto backend = std::make_shared<ThrowingBackend>(2, message.toStdString());
        MemoryGuard guard(backend);
        std::vector<Request> requests;
        for (int i = 0; i < 8; ++i)
            requests.push_back(request(4, t0, std::uint64_t(i + 1)));
        BatchInput input;
        input.paddedLength = 4;
        for (const Request &r : requests)
            input.requests.push_back(&r);
        std::vector<SequenceResult> out(8);
        const GuardedRun run = guard.runGuarded(input, out);
        QVERIFY2(run.status.isOk(), run.status.toString().c_str());
        QCOMPARE(backend->sizes, (std::vector<int>{8, 4, 2, 2, 4, 2, 2}));
        QCOMPARE(run.splits, 3);
        QCOMPARE(run.largestOk, 2);
        for (std::size_t i = 0; i < out.size(); ++i) // every member ran, in order
            QCOMPARE(out[i].values, std::vector<float>{float(i + 1)});
        const auto lowering = MemoryGuard::loweredLimit(run, 8);
        QVERIFY(lowering);
        QCOMPARE(lowering->limit, 2);
    }

    void memoryGuardFailsOtherErrorsWhole()
    {
        auto backend = std::make_shared<ThrowingBackend>(0, "mat1 and mat2 shapes cannot be multiplied");
        MemoryGuard guard(backend);
        const Request r1 = request(4, t0, 1), r2 = request(4, t0, 2);
        BatchInput input{{&r1, &r2}, 4};
        std::vector<SequenceResult> out(2);
        const GuardedRun run = guard.runGuarded(input, out);
        QCOMPARE(run.status.code(), StatusCode::Internal);
        QCOMPARE(run.splits, 0);
        QCOMPARE(backend->sizes, std::vector<int>{2});
        QVERIFY(!MemoryGuard::loweredLimit(run, 2));
    }

    void configVersionsStampOnlyRealChanges()
    {
        BatchingConfig c;
        ConfigVersions versions(c, t0);
        QCOMPARE(versions.version(), std::uint64_t(1));
        QCOMPARE(versions.history().size(), std::size_t(1));
        ConfigChange change;
        QVERIFY(versions.apply(ConfigPatch::whole(c), "gui", {}, t0 + 1s, change).isOk());
        QCOMPARE(change.version, std::uint64_t(0)); // nothing changed: no version
        BatchingConfig bigger = c;
        bigger.maxBatchSize = c.maxBatchSize * 2;
        QVERIFY(versions.apply(ConfigPatch::whole(bigger), "rest", "because", t0 + 2s, change).isOk());
        QCOMPARE(change.version, std::uint64_t(2));
        QCOMPARE(change.origin, std::string("rest"));
        QVERIFY(change.summary.starts_with("because: "));
        QCOMPARE(versions.current()->maxBatchSize, bigger.maxBatchSize);
        BatchingConfig bad = bigger;
        bad.maxBatchSize = 0;
        const std::shared_ptr<const BatchingConfig> before = versions.current();
        QVERIFY(!versions.apply(ConfigPatch::whole(bad), "rest", {}, t0 + 3s, change).isOk());
        QCOMPARE(versions.current(), before); // refused: nothing changed
        QCOMPARE(versions.version(), std::uint64_t(2));
        QCOMPARE(versions.history().size(), std::size_t(2));
    }

    void batchOutcomesAreBuiltFromTheRunAlone()
    {
        Batch batch;
        batch.id = 7;
        batch.dispatchedAt = t0 + 3ms;
        batch.intendedAt = t0 + 2ms;
        batch.paddedLength = 6;
        batch.items.push_back({request(4, t0, 1), {}, 1});
        batch.items.push_back({request(6, t0 + 1ms, 2), {}, 2});
        UnitRun run;
        run.executor = 3;
        run.start = t0 + 4ms;
        run.end = t0 + 10ms;
        run.results.resize(2);
        run.results[0].tokens = {1, 2, 3};
        run.results[0].firstTokenAfter = 1ms;
        run.results[0].lastTokenAfter = 5ms;
        run.results[1].status = Status(StatusCode::InvalidArgument, "member failed");
        const BatchRecord br = batchRecordOf(batch, run);
        QCOMPARE(br.realTokens, std::int64_t(10));
        QCOMPARE(br.paddedTokens, std::int64_t(12));
        QCOMPARE(br.compute, Duration(6ms));
        QCOMPARE(br.executor, 3);
        UnitRun whole = run; // before the responses take the results' tokens
        std::vector<Response> responses;
        batchResponses(batch, run, responses);
        std::vector<RequestRecord> records;
        for (const Response &r : responses)
            records.push_back(completedRecord(batch.items[records.size()].request, r, batch.id));
        QCOMPARE(responses[0].timing.queueWait, Duration(3ms));
        QCOMPARE(responses[0].timing.total, Duration(10ms));
        QCOMPARE(responses[0].timing.intendedWait, Duration(2ms));
        QCOMPARE(responses[0].timing.timeToFirstToken, Duration(5ms));
        QCOMPARE(responses[0].timing.timePerOutputToken, Duration(2ms));
        QCOMPARE(responses[1].status.code(), StatusCode::InvalidArgument);
        QCOMPARE(records[1].status, StatusCode::InvalidArgument);
        QCOMPARE(records[0].outputTokens, 3);
        QCOMPARE(records[0].bucket, batch.bucket);
        QCOMPARE(records[0].timePerOutputToken, Duration(2ms));
        // a failed batch overrides every member's status
        whole.guard.status = Status(StatusCode::Internal, "backend failed");
        batchResponses(batch, whole, responses);
        QCOMPARE(responses[0].status.code(), StatusCode::Internal);
        QCOMPARE(responses[0].status.message(), std::string("backend failed"));
    }

    void cacheInterceptorFollowsTheConfig()
    {
        BatchingConfig c;
        c.cache.enabled = true;
        CacheInterceptor cache(c);
        const Request r = request(3, t0);
        QVERIFY(!cache.answer(r));
        Response ok;
        ok.tokens = {9};
        cache.observe(r, ok, {});
        QVERIFY(cache.answer(r));
        QCOMPARE(cache.answer(r)->tokens, std::vector<TokenId>{9});
        BatchingConfig off = c;
        off.cache.enabled = false;
        cache.configured(c, off);
        QVERIFY(!cache.answer(r));
        cache.configured(off, c);
        QVERIFY(!cache.answer(r)); // switching off emptied it
    }

    // The Engine drives any Scheduler; makeScheduler gives the request-level
    // Batcher for every request-level policy, and manual scheduling works
    // through the seam.
    void engineRunsThroughTheSeam()
    {
        for (PolicyKind policy : {PolicyKind::None, PolicyKind::Dynamic, PolicyKind::Bucketed}) {
            BatchingConfig c;
            c.policy = policy;
            QVERIFY(dynamic_cast<Batcher *>(makeScheduler(c, ModelLimits{}, nullptr).get()));
        }
        FakeClock clock; // starts at t0
        auto backend = std::make_shared<ThrowingBackend>(100, "unused");
        EngineOptions o;
        o.backend = backend;
        o.clock = &clock;
        o.manualScheduling = true;
        o.probeMemory = false;
        o.batching.policy = PolicyKind::Dynamic;
        o.batching.maxBatchSize = 4;
        o.batching.maxQueueDelay = 5ms;
        auto engine = Engine::create(o);
        QVERIFY(engine.isOk());
        Engine &e = **engine;
        std::vector<Response> got;
        for (int i = 0; i < 3; ++i)
            QVERIFY(e.submit(request(2, {}, 0), [&](Response &&r) { got.push_back(std::move(r)); }).isOk());
        Engine::Step step = e.runSchedulerOnce();
        QVERIFY(!step.dispatched);
        QCOMPARE(step.wakeAt, std::optional<TimePoint>(t0 + 5ms));
        clock.advance(5ms);
        QVERIFY(e.runSchedulerOnce().dispatched);
        QCOMPARE(got.size(), std::size_t(3));
        QCOMPARE(backend->sizes, std::vector<int>{3});
        QCOMPARE(got[0].batch.reason, DispatchReason::DelayExpired);
    }
};

QTEST_APPLESS_MAIN(TestSeam)
#include "test_seam.moc"
