// createEngine() records the live session: the database directory is
// created, the session row carries model/device/host facts, every request
// reaches the store, and shutdown ends the session after the drain. A
// database that cannot be used leaves serving running with a warning.
#include "app/app_options.h"
#include "app/engine_host.h"

#include <QtTest>

#include <condition_variable>

using namespace bp;
using namespace std::chrono_literals;

namespace {

struct Waiter {
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t ok = 0;
    Completion callback()
    {
        return [this](Response &&r) {
            std::lock_guard lock(mutex);
            ok += r.status.isOk();
            cv.notify_all();
        };
    }
    bool waitFor(std::size_t n)
    {
        std::unique_lock lock(mutex);
        return cv.wait_for(lock, 30s, [&] { return ok >= n; });
    }
};

bool serve(Engine &engine, std::size_t n, int maxNewTokens = 0)
{
    Waiter w;
    for (std::size_t i = 0; i < n; ++i) {
        Request r;
        r.tokens.assign(12, 5);
        r.maxNewTokens = maxNewTokens;
        if (!engine.submit(std::move(r), w.callback()))
            return false;
    }
    return w.waitFor(n);
}

app::AppOptions echoOptions(const QString &db)
{
    app::AppOptions o;
    o.model = "builtin:echo";
    o.device = "cpu";
    o.db = db;
    return o;
}

} // namespace

class TestEngineHost : public QObject {
    Q_OBJECT
private slots:
    void recordsTheLiveSession()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath("nested/dir/traces.sqlite");
        std::int64_t id = 0;
        {
            auto host = app::createEngine(echoOptions(db));
            QVERIFY2(host.engine, qPrintable(host.error));
            QVERIFY2(host.loggingWarning.isEmpty(), qPrintable(host.loggingWarning));
            QVERIFY(host.recorder);
            QVERIFY(host.store);
            id = host.sessionId();
            QVERIFY(id > 0);
            QVERIFY(serve(*host.engine, 300));
            // the destructor drains, then ends the session
        }
        auto store = TraceStore::open(db.toStdString(), TraceStore::OpenMode::MustExist);
        QVERIFY(store);
        auto s = (*store)->session(id);
        QVERIFY(s);
        QCOMPARE(s->kind, std::string("live"));
        QCOMPARE(s->model, std::string("builtin:echo"));
        QCOMPARE(s->device, std::string("cpu"));
        QVERIFY(s->host.contains("hostname"));
        QVERIFY(s->endedAtUs);
        QCOMPARE(s->requestCount, std::uint64_t(300));
        QCOMPARE(s->droppedRows, std::uint64_t(0));
        QCOMPARE((*store)->configHistory(id)->size(), std::size_t(1));
        QVERIFY((*store)->metricSamples(id)->size() >= 1); // at least the final one
        QCOMPARE((*store)->metricSamples(id)->back().completed, std::uint64_t(300));
    }

    void explicitShutdownIsIdempotent()
    {
        QTemporaryDir dir;
        auto host = app::createEngine(echoOptions(dir.filePath("t.sqlite")));
        QVERIFY(host.engine && host.recorder);
        QVERIFY(serve(*host.engine, 10));
        host.engine->shutdown(); // e.g. the REST endpoint drained it first
        host.shutdown();
        host.shutdown();
        QVERIFY(host.recorder->finished());
        QVERIFY((*TraceStore::open(dir.filePath("t.sqlite").toStdString()))->session(host.sessionId())->endedAtUs);
    }

    void unusableDatabaseStillServes()
    {
        QTemporaryDir dir;
        QFile text(dir.filePath("notes.sqlite"));
        QVERIFY(text.open(QIODevice::WriteOnly));
        text.write(QByteArray(8192, 'n'));
        text.close();
        auto host = app::createEngine(echoOptions(text.fileName()));
        QVERIFY(host.engine);
        QVERIFY(!host.recorder);
        QVERIFY2(host.loggingWarning.contains("not a BatchPilot trace database"), qPrintable(host.loggingWarning));
        QVERIFY(host.loggingWarning.contains("Serving continues"));
        QVERIFY(serve(*host.engine, 50));
        QCOMPARE(host.droppedRows(), std::uint64_t(0));
    }

    void noDatabaseMeansNoRecording()
    {
        auto host = app::createEngine(echoOptions({}));
        QVERIFY(host.engine);
        QVERIFY(!host.recorder);
        QVERIFY(host.loggingWarning.isEmpty());
        QCOMPARE(host.sessionId(), std::int64_t(0));
    }

    void spinOptionIsParsedAndChecked()
    {
        auto parsed = app::parseAppOptions({"batchpilot", "--headless", "--spin-us", "0"});
        QVERIFY(parsed.options);
        QCOMPARE(parsed.options->spinUs, 0);
        QCOMPARE(app::parseAppOptions({"batchpilot", "--headless"}).options->spinUs, -1); // engine default
        for (const char *bad : {"-1", "100001", "fast"}) {
            auto refused = app::parseAppOptions({"batchpilot", "--spin-us", bad});
            QVERIFY(!refused.options);
            QVERIFY2(refused.error.contains("--spin-us"), qPrintable(refused.error));
        }
        auto o = echoOptions({});
        o.spinUs = 0;
        auto host = app::createEngine(o); // an engine that never spins still serves
        QVERIFY(host.engine);
        QVERIFY(serve(*host.engine, 50));
    }

    void noLogMeansNoDatabase()
    {
        auto parsed = app::parseAppOptions({"batchpilot", "--headless", "--no-log"});
        QVERIFY(parsed.options);
        QVERIFY(parsed.options->db.isEmpty());
        QVERIFY(!app::parseAppOptions({"batchpilot", "--headless"}).options->db.isEmpty()); // the default database
        app::AppOptions o = *parsed.options;
        o.model = "builtin:echo";
        auto host = app::createEngine(o);
        QVERIFY(host.engine);
        QVERIFY(!host.store);
        QCOMPARE(host.sessionId(), std::int64_t(0));
    }

    void badModelIsAnError()
    {
        QTemporaryDir dir;
        auto o = echoOptions(dir.filePath("t.sqlite"));
        o.model = "builtin:no-such-model";
        auto host = app::createEngine(o);
        QVERIFY(!host.engine);
        QVERIFY(!host.error.isEmpty());
        QVERIFY(!QFile::exists(dir.filePath("t.sqlite"))); // nothing recorded for an engine that never ran
    }

    // A generative model opens in `continuous` (the policy
    // every LLM server uses), an encoder and the no-compute echo in
    // `dynamic`; an explicit --config still wins.
    void defaultPolicyFollowsTheModel_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("withConfig");
        QTest::addColumn<int>("policy");
        QTest::newRow("decoder") << "builtin:tiny-decoder" << false << int(PolicyKind::Continuous);
        QTest::newRow("decoder, --config") << "builtin:tiny-decoder" << true << int(PolicyKind::Dynamic);
        QTest::newRow("encoder") << "builtin:tiny-encoder" << false << int(PolicyKind::Dynamic);
        QTest::newRow("echo") << "builtin:echo" << false << int(PolicyKind::Dynamic);
    }
    void defaultPolicyFollowsTheModel()
    {
        QFETCH(QString, model);
        QFETCH(bool, withConfig);
        QFETCH(int, policy);
        QTemporaryDir dir;
        app::AppOptions o;
        o.model = model;
        o.preset = "test";
        o.threads = 1;
        o.device = "cpu";
        if (withConfig) {
            o.config = dir.filePath("dynamic.json");
            QFile file(o.config);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(R"({"policy": "dynamic", "max_batch_size": 4})");
        }
        app::EngineHostResult host = app::createEngine(o);
        if (!host.engine && model != "builtin:echo" && host.error.contains("torch"))
            QSKIP("this build has no libtorch models");
        QVERIFY2(host.engine, qPrintable(host.error));
        QCOMPARE(int(host.engine->config().policy), policy);
        QCOMPARE(app::defaultPolicyFor(host.engine->model(), true),
                 withConfig ? PolicyKind::Continuous : PolicyKind(policy));
        QVERIFY(serve(*host.engine, 3, host.engine->model().generative ? 2 : 0));
    }
};

QTEST_GUILESS_MAIN(TestEngineHost)
#include "test_engine_host.moc"
