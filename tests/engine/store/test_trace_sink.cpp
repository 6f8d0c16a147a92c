// The trace sink's promises: a full queue drops whole batches and counts
// them; a database that fills up (or cannot be opened, or is read-only)
// turns logging off with a visible warning while the engine keeps serving;
// the session recorder writes config history, samples and the session end in
// the right order.
#include "engine/exec/engine.h"
#include "engine/store/session_recorder.h"
#include "engine/store/session_summary.h"
#include "engine/store/trace_sink.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <condition_variable>
#include <filesystem>
#include <unistd.h>

using namespace bp;
using namespace std::chrono_literals;

namespace {

struct Fixture {
    QTemporaryDir dir;
    std::string path = dir.filePath("t.sqlite").toStdString();
    std::shared_ptr<TraceStore> store = TraceStore::open(path).value();
};

BatchRecord batchOf(std::uint64_t id, int size)
{
    BatchRecord b;
    b.id = id;
    b.size = size;
    return b;
}

std::vector<RequestRecord> membersOf(std::uint64_t batch, int size)
{
    std::vector<RequestRecord> rs(static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i) {
        rs[std::size_t(i)].id = batch * 100 + std::uint64_t(i);
        rs[std::size_t(i)].batchId = batch;
        rs[std::size_t(i)].inputTokens = 8;
    }
    return rs;
}

// Counts completions; waits on a condition.
struct Waiter {
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t ok = 0, other = 0;
    Completion callback()
    {
        return [this](Response &&r) {
            std::lock_guard lock(mutex);
            ++(r.status.isOk() ? ok : other);
            cv.notify_all();
        };
    }
    bool waitFor(std::size_t n)
    {
        std::unique_lock lock(mutex);
        return cv.wait_for(lock, 60s, [&] { return ok + other >= n; });
    }
};

// Pushes `n` requests of `length` tokens through `engine` and waits for them.
void serve(Engine &engine, Waiter &w, std::size_t n, int length)
{
    for (std::size_t i = 0; i < n; ++i) {
        Request r;
        r.tokens.assign(std::size_t(length), 3);
        while (!engine.submit(r, w.callback()).isOk())
            std::this_thread::yield(); // queue full: retry (completions free room)
    }
    QVERIFY(w.waitFor(n));
}

} // namespace

class TestTraceSink : public QObject {
    Q_OBJECT
private slots:
    void fullQueueDropsWholeBatchesAndCounts()
    {
        Fixture f;
        const auto id = *f.store->startSession({});
        TraceSinkOptions o;
        o.queueCapacity = 100;
        auto sink = TraceSink::create(f.path, id, SteadyClock::now(), o);
        QVERIFY(sink);
        // Not started yet: rows queue up to the capacity, then drop.
        for (std::uint64_t b = 1; b <= 30; ++b)
            (*sink)->onBatchCompleted(batchOf(b, 4), membersOf(b, 4)); // 5 rows each
        QCOMPARE((*sink)->droppedRows(), std::uint64_t(50));
        (*sink)->start();
        QVERIFY((*sink)->flush());
        QCOMPARE((*sink)->writtenRows(), std::uint64_t(100));
        QVERIFY((*sink)->loggingActive());
        QVERIFY((*sink)->warning().empty());
        auto batches = f.store->batches(id);
        auto requests = f.store->requests(id);
        QCOMPARE(batches->size(), std::size_t(20));
        QCOMPARE(requests->size(), std::size_t(80));
        for (const StoredRequest &r : *requests)
            QVERIFY(r.batchId >= 1 && r.batchId <= 20); // whole batches only
        // After stop(), records are dropped and counted.
        (*sink)->stop();
        (*sink)->onRequestFailed(membersOf(99, 1)[0]);
        QCOMPARE((*sink)->droppedRows(), std::uint64_t(51));
        QVERIFY(!(*sink)->flush());
    }

    // Config rows were once dropped with everything else when the
    // queue was full, and replays and reports then described another
    // session. A change is never dropped for a full queue.
    void configRowsSurviveAFullQueue()
    {
        Fixture f;
        const auto id = *f.store->startSession({});
        TraceSinkOptions so;
        so.queueCapacity = 5;
        auto sink = TraceSink::create(f.path, id, SteadyClock::now(), so);
        QVERIFY(sink);
        FakeClock clock;
        EngineOptions eo;
        eo.backend = makeEchoBackend();
        eo.clock = &clock;
        eo.manualScheduling = true;
        auto engine = Engine::create(eo);
        QVERIFY(engine);
        (*engine)->addObserver(*sink);
        // Not started: the queue fills up and the next batch is dropped.
        (*sink)->onBatchCompleted(batchOf(1, 4), membersOf(1, 4));
        (*sink)->onBatchCompleted(batchOf(2, 4), membersOf(2, 4));
        QCOMPARE((*sink)->droppedRows(), std::uint64_t(5));
        BatchingConfig changed = (*engine)->config();
        changed.maxBatchSize = 7;
        QVERIFY((*engine)->reconfigure(changed, "test"));
        QCOMPARE((*sink)->droppedRows(), std::uint64_t(5)); // the change was kept
        (*sink)->onBatchCompleted(batchOf(3, 1), membersOf(3, 1));
        QCOMPARE((*sink)->droppedRows(), std::uint64_t(7)); // the queue is still full for the rest
        (*sink)->start();
        QVERIFY((*sink)->flush());
        auto history = f.store->configHistory(id);
        QCOMPARE(history->size(), std::size_t(1));
        QCOMPARE(history->at(0).origin, std::string("test"));
        QCOMPARE(history->at(0).config.maxBatchSize, 7);
        QCOMPARE(f.store->batches(id)->size(), std::size_t(1));
    }

    // Cache hits were once documented as traced, but the sink had no
    // override for them. One is a request row with batch_id 0 and status ok.
    void cacheHitsAreTraced()
    {
        Fixture f;
        const auto id = *f.store->startSession({});
        auto sink = TraceSink::create(f.path, id, SteadyClock::now());
        QVERIFY(sink);
        (*sink)->start();
        FakeClock clock;
        EngineOptions eo;
        eo.backend = makeEchoBackend();
        eo.clock = &clock;
        eo.manualScheduling = true;
        eo.batching.policy = PolicyKind::None;
        eo.batching.cache.enabled = true;
        auto engine = Engine::create(eo);
        QVERIFY(engine);
        (*engine)->addObserver(*sink);
        Waiter w;
        Request r;
        r.tokens = {5, 6, 7};
        QVERIFY((*engine)->submit(r, w.callback()).isOk());
        QVERIFY((*engine)->runSchedulerOnce().dispatched);
        QVERIFY((*engine)->submit(r, w.callback()).isOk()); // answered from the cache
        QVERIFY(w.waitFor(2));
        QCOMPARE((*engine)->snapshot().cacheHits, std::uint64_t(1));
        QVERIFY((*sink)->flush());
        auto requests = f.store->requests(id);
        QCOMPARE(requests->size(), std::size_t(2));
        int hits = 0;
        for (const StoredRequest &stored : *requests) {
            QCOMPARE(stored.status, StatusCode::Ok);
            QCOMPARE(stored.inputTokens, 3);
            hits += stored.cacheHit();
        }
        QCOMPARE(hits, 1);
        QCOMPARE(f.store->summary(id)->completed, std::uint64_t(2));
    }

    void fullDatabaseTurnsLoggingOffWhileServingGoesOn()
    {
        Fixture f;
        auto backend = makeEchoBackend();
        EngineOptions eo;
        eo.backend = backend;
        eo.batching.maxBatchSize = 8;
        eo.batching.maxQueueDelay = 100us;
        auto engine = Engine::create(eo);
        QVERIFY(engine);
        RecorderOptions ro;
        ro.samplePeriod = Duration::zero();
        // A few pages above the empty schema: the first big transaction fails
        // with SQLITE_FULL, as on a full disk.
        ro.sink.maxDatabaseBytes = std::int64_t(std::filesystem::file_size(f.path)) + 16 * 4096;
        ro.sink.wakeRows = 1000;
        auto recorder = SessionRecorder::start(f.store, **engine, {}, ro);
        QVERIFY2(recorder, recorder.status().toString().c_str());
        TraceSink &sink = *(*recorder)->sink();

        Waiter w;
        serve(**engine, w, 20000, 16);
        QCOMPARE(w.ok, std::size_t(20000)); // every request served
        sink.flush();
        QVERIFY(!sink.loggingActive());
        const std::string warning = sink.warning();
        QVERIFY2(warning.find("full") != std::string::npos, warning.c_str());
        QVERIFY(warning.find("SQLITE_FULL") != std::string::npos);
        QVERIFY(warning.find("Serving continues") != std::string::npos);
        QVERIFY(sink.droppedRows() > 0);

        // Serving still goes on after logging stopped.
        Waiter more;
        serve(**engine, more, 1000, 16);
        QCOMPARE(more.ok, std::size_t(1000));
        (*engine)->shutdown();
        const Snapshot snap = (*engine)->snapshot();
        QVERIFY((*recorder)->finish());
        // Every row is accounted for: written or counted as dropped.
        // (requests rows: every final status, the queue-full rejections of
        // serve()'s retries included)
        std::uint64_t requestRows = 0;
        for (auto n : snap.byStatus)
            requestRows += n;
        const std::uint64_t produced = snap.batches + requestRows + 1 /* config */ + 1 /* final sample */;
        QCOMPARE(sink.writtenRows() + sink.droppedRows(), produced);
        // The session row (written on the store's own, uncapped connection)
        // says why and how much.
        auto session = f.store->session((*recorder)->sessionId());
        QVERIFY(session->endedAtUs);
        QCOMPARE(session->droppedRows, sink.droppedRows());
        QCOMPARE(session->loggingError, warning);
        const auto id = (*recorder)->sessionId();
        QCOMPARE(session->requestCount + session->batchCount + f.store->configHistory(id)->size() +
                     f.store->metricSamples(id)->size(),
                 sink.writtenRows());
    }

    void unopenableDatabaseIsAnError()
    {
        QTemporaryDir dir;
        auto sink =
            TraceSink::create(dir.filePath("no/such/dir/t.sqlite").toStdString(), 1, SteadyClock::now());
        QVERIFY(!sink);
        QCOMPARE(sink.status().code(), StatusCode::Unavailable);
        QVERIFY(sink.status().message().find("cannot open") != std::string::npos);
    }

    void readOnlyDatabaseTurnsLoggingOff()
    {
        if (::geteuid() == 0)
            QSKIP("root ignores file permissions");
        Fixture f;
        const auto id = *f.store->startSession({});
        auto sink = TraceSink::create(f.path, id, SteadyClock::now());
        QVERIFY(sink);
        f.store.reset();
        std::filesystem::permissions(f.path,
                                     std::filesystem::perms::owner_read | std::filesystem::perms::group_read);
        (*sink)->onBatchCompleted(batchOf(1, 2), membersOf(1, 2));
        (*sink)->start();
        (*sink)->flush();
        QVERIFY(!(*sink)->loggingActive());
        QVERIFY2((*sink)->warning().find("SQLITE_READONLY") != std::string::npos, (*sink)->warning().c_str());
        QCOMPARE((*sink)->droppedRows(), std::uint64_t(3));
    }

    void recorderWritesHistorySamplesAndEnd()
    {
        Fixture f;
        EngineOptions eo;
        eo.backend = makeEchoBackend();
        auto engine = Engine::create(eo);
        QVERIFY(engine);
        RecorderOptions ro;
        ro.samplePeriod = Duration::zero();
        SessionStart info;
        info.notes = "unit";
        auto recorder = SessionRecorder::start(f.store, **engine, info, ro);
        QVERIFY(recorder);
        BatchingConfig changed = (*engine)->config();
        changed.maxBatchSize = 4;
        QVERIFY((*engine)->reconfigure(changed, "test"));
        Waiter w;
        serve(**engine, w, 50, 8);
        (*recorder)->sampleNow();
        (*engine)->shutdown();
        QVERIFY((*recorder)->finish());
        QVERIFY((*recorder)->finish()); // idempotent

        const auto id = (*recorder)->sessionId();
        auto s = f.store->session(id);
        QCOMPARE(s->model, std::string("builtin:echo"));
        QCOMPARE(s->notes, std::string("unit"));
        QVERIFY(s->host.contains("logical_cores"));
        QVERIFY(s->endedAtUs && *s->endedAtUs >= s->startedAtUs);
        QCOMPARE(s->requestCount, std::uint64_t(50));
        QCOMPARE(s->droppedRows, std::uint64_t(0));
        auto history = f.store->configHistory(id);
        QCOMPARE(history->size(), std::size_t(2));
        QCOMPARE(history->at(0).origin, std::string("start"));
        QCOMPARE(history->at(1).origin, std::string("test"));
        QCOMPARE(history->at(1).config.maxBatchSize, 4);
        auto samples = f.store->metricSamples(id);
        QCOMPARE(samples->size(), std::size_t(2)); // ours + the final one
        QCOMPARE(samples->back().completed, std::uint64_t(50));
        QCOMPARE(samples->back().configVersion, std::uint64_t(2));
    }
};

QTEST_GUILESS_MAIN(TestTraceSink)
#include "test_trace_sink.moc"
