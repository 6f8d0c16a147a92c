// The store's file handling: a new file gets the current schema, WAL and our
// application id; an older schema (version 1) is migrated in place with its
// rows kept; foreign SQLite files, non-SQLite files and newer schemas are
// refused with a clear message and left untouched.
#include "engine/store/schema.h"
#include "engine/store/session_summary.h"
#include "engine/store/sqlite_db.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <sqlite3.h>

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

using namespace bp;

namespace {

std::string readAll(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

sqlite::Connection rawOpen(const std::string &path)
{
    auto db = sqlite::Connection::open(path, sqlite::Connection::Mode::ReadWriteCreate);
    Q_ASSERT(db);
    return std::move(db.value());
}

// Holds connections that hit SQLITE_BUSY until the test opens it: both are
// then known to be waiting for the write lock at once.
struct BusyGate {
    std::mutex mutex;
    std::condition_variable cv;
    int blocked = 0;
    bool open = false;

    static int handler(void *arg, int count)
    {
        auto *g = static_cast<BusyGate *>(arg);
        std::unique_lock lock(g->mutex);
        if (count == 0 && !g->open) {
            ++g->blocked;
            g->cv.notify_all();
        }
        g->cv.wait(lock, [g] { return g->open; });
        lock.unlock();
        sqlite3_sleep(1); // the other one holds the lock: retry shortly
        return 1;
    }
};

} // namespace

class TestStoreSchema : public QObject {
    Q_OBJECT
private slots:
    void newFileGetsCurrentSchema()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("new.sqlite").toStdString();
        auto store = TraceStore::open(path);
        QVERIFY2(store, store.status().toString().c_str());
        QCOMPARE((*store)->schemaVersion(), store::kSchemaVersion);
        store.value().reset();
        auto db = rawOpen(path);
        QCOMPARE(*db.queryInt("PRAGMA application_id"), store::kApplicationId);
        QCOMPARE(*db.queryText("PRAGMA journal_mode"), std::string("wal"));
        QCOMPARE(*db.queryInt("PRAGMA user_version"), std::int64_t(store::kSchemaVersion));
    }

    void migratesVersion1InPlace()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("v1.sqlite").toStdString();
        {
            // A file as BatchPilot's schema version 1 wrote it, with data.
            auto db = rawOpen(path);
            QVERIFY(store::migrate(db, 1));
            QCOMPARE(*db.queryInt("PRAGMA user_version"), std::int64_t(1));
            QVERIFY(db.exec("INSERT INTO sessions (id, kind, started_at_us, ended_at_us, model, device) "
                            "VALUES (7, 'live', 1000, 2000, 'builtin:echo', 'cpu');"
                            "INSERT INTO requests VALUES (7, 1, 10, 20, 30, 60, 0, 5, 5, 0, 1, 'ok');"
                            "INSERT INTO batches VALUES (7, 1, 30, 30, 1, 5, 5, 5, 30, 'single', 'none', 0, 0, 1, 'ok');"
                            "INSERT INTO metric_samples VALUES (7, 1000, 1, 5, 5, 60, 60, 60, 20, 0, 0, 1, 1, 0.5, 1, 1, 0, 1);"
                            "INSERT INTO traces VALUES (3, 'old', '/tmp/old.csv', 'azure', 1000, 1, 0, 0.0);"
                            "INSERT INTO trace_requests VALUES (3, 0, 0, 12, 4);",
                            "write version-1 rows"));
            // Version 1 had no replay lineage.
            QVERIFY(!db.exec("SELECT source_session_id FROM sessions", "probe"));
        }
        auto store = TraceStore::open(path);
        QVERIFY2(store, store.status().toString().c_str());
        QCOMPARE((*store)->schemaVersion(), store::kSchemaVersion);
        // v4: a trace from before prefix blocks has none.
        auto oldTrace = (*store)->trace(3);
        QVERIFY2(oldTrace, oldTrace.status().toString().c_str());
        QCOMPARE(oldTrace->format, TraceFormat::Azure);
        QCOMPARE(oldTrace->blockTokens, 0);
        QVERIFY((*store)->traceHashIds(3)->empty());
        QCOMPARE((*store)->traceRows(3)->front().inputTokens, 12);
        auto s = (*store)->session(7);
        QVERIFY(s);
        QCOMPARE(s->model, std::string("builtin:echo"));
        QCOMPARE(*s->endedAtUs, std::int64_t(2000));
        QCOMPARE(s->droppedRows, std::uint64_t(0));
        QVERIFY(!s->sourceSessionId);
        QCOMPARE(s->requestCount, std::uint64_t(1));
        auto requests = (*store)->requests(7);
        QVERIFY(requests);
        QCOMPARE(requests->at(0).source, std::string("live")); // the v2 column's default
        QCOMPARE(requests->at(0).total, Duration(60));
        auto samples = (*store)->metricSamples(7);
        QVERIFY(samples);
        QCOMPARE(samples->size(), std::size_t(1));
        QCOMPARE(samples->at(0).droppedRows, std::uint64_t(0));
        // The new columns work.
        SessionStart replay;
        replay.kind = "replay";
        replay.sourceSessionId = 7;
        auto id = (*store)->startSession(replay);
        QVERIFY(id);
        QCOMPARE(*(*store)->session(*id)->sourceSessionId, std::int64_t(7));
    }

    void migratesVersion2InPlace()
    {
        // Version 3 adds remote targets: sessions.target_url and target_samples.
        QTemporaryDir dir;
        const std::string path = dir.filePath("v2.sqlite").toStdString();
        {
            auto db = rawOpen(path);
            QVERIFY(store::migrate(db, 2));
            QVERIFY(db.exec("INSERT INTO sessions (id, kind, started_at_us, model) VALUES (3, 'replay', 1000, 'x');",
                            "write a version-2 session"));
            QVERIFY(!db.exec("SELECT target_url FROM sessions", "probe"));
        }
        auto store = TraceStore::open(path);
        QVERIFY2(store, store.status().toString().c_str());
        QCOMPARE((*store)->schemaVersion(), store::kSchemaVersion);
        auto old = (*store)->session(3);
        QVERIFY(old);
        QCOMPARE(old->targetUrl, std::string()); // the column's default
        auto none = (*store)->targetSamples(3);
        QVERIFY(none && none->empty());
        QCOMPARE((*store)->targetSamples(99).status().code(), StatusCode::NotFound);
        SessionStart remote;
        remote.kind = "remote";
        remote.targetUrl = "http://10.0.0.7:8000/";
        auto id = (*store)->startSession(remote);
        QVERIFY(id);
        QCOMPARE((*store)->session(*id)->targetUrl, std::string("http://10.0.0.7:8000/"));
        nlohmann::json replay{{"target", {{"protocol", "openai"}}}};
        QVERIFY((*store)->setSessionReplay(*id, replay));
        QVERIFY((*store)->session(*id)->replay == replay);
        QCOMPARE((*store)->setSessionReplay(12345, replay).code(), StatusCode::NotFound);
    }

    void migratesVersion5InPlace()
    {
        // Version 6 adds token-level timing: requests.tpot_ns and the ITL
        // summary, batches' step columns; old rows read back as zeros.
        QTemporaryDir dir;
        const std::string path = dir.filePath("v5.sqlite").toStdString();
        {
            auto db = rawOpen(path);
            QVERIFY(store::migrate(db, 5));
            QCOMPARE(*db.queryInt("PRAGMA user_version"), std::int64_t(5));
            QVERIFY(db.exec("INSERT INTO sessions (id, kind, started_at_us, model) VALUES (4, 'live', 1000, 'x');"
                            "INSERT INTO requests VALUES (4, 1, 10, 20, 30, 60, 25, 5, 3, 0, 1, 'ok', 'live');"
                            "INSERT INTO batches VALUES (4, 1, 30, 30, 1, 5, 5, 5, 30, 'single', 'dynamic', 0, 0, "
                            "1, 'ok');",
                            "write version-5 rows"));
            QVERIFY(!db.exec("SELECT tpot_ns FROM requests", "probe"));
            QVERIFY(!db.exec("SELECT kv_tokens FROM batches", "probe"));
        }
        auto store = TraceStore::open(path);
        QVERIFY2(store, store.status().toString().c_str());
        QCOMPARE((*store)->schemaVersion(), store::kSchemaVersion);
        auto requests = (*store)->requests(4);
        QVERIFY2(requests, requests.status().toString().c_str());
        QCOMPARE(requests->size(), std::size_t(1));
        QCOMPARE(requests->at(0).timeToFirstToken, Duration(25));
        QCOMPARE(requests->at(0).timePerOutputToken, Duration(0));
        QCOMPARE(requests->at(0).interTokenMax, Duration(0));
        auto batches = (*store)->batches(4);
        QVERIFY(batches);
        QCOMPARE(batches->at(0).size, 1);
        QCOMPARE(batches->at(0).decodeTokens, 0);
        QCOMPARE(batches->at(0).kvTokens, std::int64_t(0));
        auto summary = (*store)->summary(4);
        QVERIFY2(summary, summary.status().toString().c_str());
        QCOMPARE(summary->ttftP50Ms, 25e-6);
        QCOMPARE(summary->tpotP50Ms, 0.0); // no TPOT stored before version 6
        QCOMPARE(summary->goodCompleted, std::uint64_t(1)); // no config, no SLO: every completed one
    }

    void migratesVersion8InPlace()
    {
        // Version 10: conversations and turns on requests and
        // trace rows, think times on trace rows, the target's prefix-cache
        // hit rate. Old rows read back as single requests, old scrapes
        // without a hit rate; new rows store all of them.
        QTemporaryDir dir;
        const std::string path = dir.filePath("v8.sqlite").toStdString();
        {
            auto db = rawOpen(path);
            QVERIFY(store::migrate(db, 8));
            QCOMPARE(*db.queryInt("PRAGMA user_version"), std::int64_t(8));
            QVERIFY(db.exec(
                "INSERT INTO sessions (id, kind, started_at_us, model) VALUES (4, 'remote', 1000, 'x');"
                "INSERT INTO requests VALUES (4, 1, 10, 20, 30, 60, 25, 5, 3, 0, 0, 'ok', 'remote', 7, 6, 9);"
                "INSERT INTO target_samples VALUES (4, 100, 'vllm', 2, 1, 2, 1, 0.5, 40, '');"
                "INSERT INTO traces (id, name, format, imported_at_us, row_count, duration_s, block_tokens) "
                "VALUES (2, 'm', 'mooncake', 1, 2, 1.5, 512);"
                "INSERT INTO trace_requests VALUES (2, 0, 0, 600, 5, '1,2'), (2, 1, 1500000000, 700, 6, '1,3');",
                "write version-8 rows"));
            QVERIFY(!db.exec("SELECT conversation_id FROM requests", "probe"));
        }
        auto store = TraceStore::open(path);
        QVERIFY2(store, store.status().toString().c_str());
        QCOMPARE((*store)->schemaVersion(), store::kSchemaVersion);
        auto requests = (*store)->requests(4).value();
        QCOMPARE(requests.size(), std::size_t(1));
        QCOMPARE(requests[0].inputTokens, 5);
        QCOMPARE(requests[0].conversation, std::int64_t(0));
        QCOMPARE(requests[0].turn, 0);
        auto samples = (*store)->targetSamples(4).value();
        QCOMPARE(samples.size(), std::size_t(1));
        QCOMPARE(samples[0].kvUsage, std::optional<double>(0.5));
        QVERIFY(!samples[0].prefixCacheHitRate);
        auto rows = (*store)->traceRows(2).value();
        QCOMPARE(rows.size(), std::size_t(2));
        QCOMPARE(rows[1].inputTokens, 700);
        QCOMPARE(rows[1].conversation, std::int64_t(0));
        QCOMPARE(rows[1].thinkS, 0.0);
        QCOMPARE((*store)->traceHashIds(2).value().at(1), (PrefixBlocks{1, 3}));
        // New rows in the migrated file keep their conversations.
        std::vector<TraceRow> chat = {{0, 10, 2, 1, 1, 0}, {1, 4, 2, 1, 2, 0.75}};
        auto added = (*store)->addTrace("chat", "", TraceFormat::MultiTurn, chat);
        QVERIFY2(added, added.status().toString().c_str());
        auto back = (*store)->traceRows(added->id).value();
        QCOMPARE(back[1].conversation, std::int64_t(1));
        QCOMPARE(back[1].turn, 2);
        QCOMPARE(back[1].thinkS, 0.75);
        QCOMPARE(added->format, TraceFormat::MultiTurn);
    }

    void refusesNewerSchema()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("future.sqlite").toStdString();
        QVERIFY(TraceStore::open(path));
        {
            auto db = rawOpen(path);
            QVERIFY(db.exec("PRAGMA user_version = 99", "bump"));
        }
        auto store = TraceStore::open(path);
        QVERIFY(!store);
        QCOMPARE(store.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(store.status().message().find("newer BatchPilot") != std::string::npos,
                 store.status().message().c_str());
    }

    void refusesForeignSqliteUntouched()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("other.sqlite").toStdString();
        {
            auto db = rawOpen(path);
            QVERIFY(db.exec("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('ada');", "seed"));
        }
        const std::string before = readAll(path);
        auto store = TraceStore::open(path);
        QVERIFY(!store);
        QCOMPARE(store.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(store.status().message().find("not a BatchPilot trace database") != std::string::npos,
                 store.status().message().c_str());
        QCOMPARE(readAll(path), before);
        QVERIFY(!QFile::exists(QString::fromStdString(path + "-wal")));
    }

    void refusesNonSqliteUntouched()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("notes.txt").toStdString();
        {
            std::ofstream out(path);
            for (int i = 0; i < 200; ++i)
                out << "this is a text file, not a database\n";
        }
        const std::string before = readAll(path);
        auto store = TraceStore::open(path);
        QVERIFY(!store);
        QCOMPARE(store.status().code(), StatusCode::InvalidArgument);
        QVERIFY2(store.status().message().find("not an SQLite file") != std::string::npos,
                 store.status().message().c_str());
        QCOMPARE(readAll(path), before);
    }

    void mustExistDoesNotCreate()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("missing.sqlite").toStdString();
        auto store = TraceStore::open(path, TraceStore::OpenMode::MustExist);
        QVERIFY(!store);
        QCOMPARE(store.status().code(), StatusCode::NotFound);
        QVERIFY(!QFile::exists(QString::fromStdString(path)));
    }

    void directoryIsRefused()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.path().toStdString());
        QVERIFY(!store);
        QCOMPARE(store.status().code(), StatusCode::InvalidArgument);
    }

    void emptyFileIsInitialized()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("empty.sqlite").toStdString();
        std::ofstream(path).close();
        auto store = TraceStore::open(path, TraceStore::OpenMode::MustExist);
        QVERIFY2(store, store.status().toString().c_str());
        QCOMPARE((*store)->schemaVersion(), store::kSchemaVersion);
    }

    void reopenKeepsData()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("keep.sqlite").toStdString();
        std::int64_t id = 0;
        {
            auto store = TraceStore::open(path);
            QVERIFY(store);
            id = *(*store)->startSession({});
        }
        auto store = TraceStore::open(path, TraceStore::OpenMode::MustExist);
        QVERIFY(store);
        QVERIFY((*store)->session(id));
        QCOMPARE((*store)->session(id + 100).status().code(), StatusCode::NotFound);
    }

    // Two processes opening an old file at once both
    // migrate it. Two connections are held at BEGIN IMMEDIATE by a third
    // that has the write lock, released together; both must succeed and the
    // file end at the current version (before the fix the version was read
    // before the lock, and the second failed on a duplicate column).
    void twoConnectionsMigratingAnOldFileAtOnce()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("race.sqlite").toStdString();
        {
            auto db = rawOpen(path);
            QVERIFY(store::configureConnection(db));
            QVERIFY(store::migrate(db, 1));
        }
        auto holder = rawOpen(path);
        QVERIFY(holder.exec("BEGIN IMMEDIATE", "hold the write lock"));
        sqlite::Connection a = rawOpen(path), b = rawOpen(path);
        BusyGate gate;
        sqlite3_busy_handler(a.handle(), &BusyGate::handler, &gate);
        sqlite3_busy_handler(b.handle(), &BusyGate::handler, &gate);
        Status ra, rb;
        std::thread ta([&] { ra = store::migrate(a); });
        std::thread tb([&] { rb = store::migrate(b); });
        bool bothWaiting = false;
        {
            std::unique_lock lock(gate.mutex);
            bothWaiting = gate.cv.wait_for(lock, std::chrono::seconds(60), [&] { return gate.blocked >= 2; });
        }
        QVERIFY(holder.exec("ROLLBACK", "release the write lock"));
        {
            std::lock_guard lock(gate.mutex);
            gate.open = true;
        }
        gate.cv.notify_all();
        ta.join();
        tb.join();
        QVERIFY(bothWaiting);
        QVERIFY2(ra.isOk(), ra.toString().c_str());
        QVERIFY2(rb.isOk(), rb.toString().c_str());
        QCOMPARE(*holder.queryInt("PRAGMA user_version"), std::int64_t(store::kSchemaVersion));
        auto store = TraceStore::open(path, TraceStore::OpenMode::MustExist);
        QVERIFY2(store, store.status().toString().c_str());
        QVERIFY((*store)->startSession({}));
    }

    // The same from two threads through TraceStore::open on an old file:
    // both get a usable store.
    void twoStoresOpeningAnOldFileAtOnce()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath("race2.sqlite").toStdString();
        {
            auto db = rawOpen(path);
            QVERIFY(store::configureConnection(db));
            QVERIFY(store::migrate(db, 2));
        }
        Result<std::shared_ptr<TraceStore>> sa = Status(StatusCode::Internal, "not run"), sb = sa;
        std::thread ta([&] { sa = TraceStore::open(path); });
        std::thread tb([&] { sb = TraceStore::open(path); });
        ta.join();
        tb.join();
        QVERIFY2(sa, sa.status().toString().c_str());
        QVERIFY2(sb, sb.status().toString().c_str());
        QCOMPARE((*sa)->schemaVersion(), store::kSchemaVersion);
        QCOMPARE((*sb)->schemaVersion(), store::kSchemaVersion);
    }
};

QTEST_GUILESS_MAIN(TestStoreSchema)
#include "test_store_schema.moc"
