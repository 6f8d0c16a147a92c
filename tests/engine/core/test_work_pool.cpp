// The CPU kernels' chunked work split (engine/core/work_pool.h):
// every item runs exactly once, a second thread takes chunks, a busy worker
// is not waited for, an exception reaches the caller, and a call from inside
// a chunk runs inline. Condition waits only (no sleeps, no timings).
#include "engine/core/work_pool.h"

#include <QtTest>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace bp;

namespace {

// Chunks that wait for each other: a chunk returns once `want` chunks are
// inside at once (or after a generous bound, so that a broken pool fails the
// test instead of hanging it).
struct Rendezvous {
    std::mutex mutex;
    std::condition_variable cv;
    int inside = 0;
    bool released = false;

    bool meet(int want)
    {
        std::unique_lock<std::mutex> lock(mutex);
        ++inside;
        cv.notify_all();
        return cv.wait_for(lock, std::chrono::seconds(20), [&] { return inside >= want || released; });
    }
    void waitFor(int want)
    {
        std::unique_lock<std::mutex> lock(mutex);
        cv.wait_for(lock, std::chrono::seconds(20), [&] { return inside >= want; });
    }
    void release()
    {
        std::lock_guard<std::mutex> lock(mutex);
        released = true;
        cv.notify_all();
    }
};

} // namespace

class TestWorkPool : public QObject {
    Q_OBJECT
private slots:
    void everyItemRunsOnce_data()
    {
        QTest::addColumn<qint64>("n");
        QTest::addColumn<qint64>("grain");
        QTest::addColumn<int>("threads");
        QTest::newRow("serial: one thread") << qint64(1000) << qint64(1) << 1;
        QTest::newRow("serial: n <= grain") << qint64(100) << qint64(128) << 2;
        QTest::newRow("two threads") << qint64(1001) << qint64(7) << 2;
        QTest::newRow("more threads than cores") << qint64(151936) << qint64(128) << 8;
        QTest::newRow("chunks fewer than threads") << qint64(3) << qint64(1) << 8;
        QTest::newRow("empty") << qint64(0) << qint64(1) << 2;
    }
    void everyItemRunsOnce()
    {
        QFETCH(qint64, n);
        QFETCH(qint64, grain);
        QFETCH(int, threads);
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
        std::atomic<bool> outside{false}; // QVERIFY only on this thread
        parallelChunks(n, grain, threads, [&](std::int64_t b, std::int64_t e) {
            if (!(0 <= b && b < e && e <= n)) {
                outside = true;
                return;
            }
            for (std::int64_t i = b; i < e; ++i)
                hits[std::size_t(i)].fetch_add(1);
        });
        QVERIFY(!outside);
        for (std::int64_t i = 0; i < n; ++i)
            QCOMPARE(hits[std::size_t(i)].load(), 1);
    }

    // Two chunks that only return once both are inside: the pool's worker
    // took one (on one thread the first would wait for the second forever).
    void aSecondThreadTakesChunks()
    {
        Rendezvous r;
        std::atomic<int> met{0};
        parallelChunks(2, 1, 2, [&](std::int64_t, std::int64_t) { met += r.meet(2) ? 1 : 0; });
        QCOMPARE(met.load(), 2);
        QCOMPARE(lastChunkThreads(), 2);
    }

    // The worker is held inside another call's chunk; a call made meanwhile
    // runs all its chunks on its own thread and returns without it (a
    // descheduled thread's share is taken by the threads that run).
    void aBusyWorkerIsNotWaitedFor()
    {
        Rendezvous held;
        std::thread other(
            [&] { parallelChunks(2, 1, 2, [&](std::int64_t, std::int64_t) { held.meet(3); }); });
        held.waitFor(2); // both of its chunks are running: the worker is one of them
        std::atomic<int> ran{0};
        parallelChunks(64, 1, 2, [&](std::int64_t b, std::int64_t e) { ran += int(e - b); });
        QCOMPARE(ran.load(), 64);
        QCOMPARE(lastChunkThreads(), 1);
        held.release();
        other.join();
    }

    void anExceptionReachesTheCaller()
    {
        std::atomic<int> ran{0};
        bool thrown = false;
        try {
            parallelChunks(100, 1, 2, [&](std::int64_t b, std::int64_t e) {
                ran += int(e - b);
                if (b == 0)
                    throw std::runtime_error("chunk 0 failed");
            });
        } catch (const std::runtime_error &e) {
            thrown = QByteArray(e.what()) == "chunk 0 failed";
        }
        QVERIFY(thrown);
        QCOMPARE(ran.load(), 100); // the other chunks still ran
    }

    void aNestedCallRunsInline()
    {
        std::atomic<int> inner{0};
        std::atomic<bool> moved{false};
        parallelChunks(4, 1, 2, [&](std::int64_t, std::int64_t) {
            const auto self = std::this_thread::get_id();
            parallelChunks(16, 1, 2, [&](std::int64_t b, std::int64_t e) {
                if (std::this_thread::get_id() != self)
                    moved = true;
                inner += int(e - b);
            });
        });
        QCOMPARE(inner.load(), 4 * 16);
        QVERIFY(!moved);
    }
};

QTEST_GUILESS_MAIN(TestWorkPool)
#include "test_work_pool.moc"
