// The headless binary's life: the token rule off loopback, graceful
// shutdown on SIGTERM/SIGINT (queued work is answered, exit code 0), and
// start-up errors.
#include "headless_process.h"
#include "rest_test_util.h"

#include <QtTest>

class TestRestLifecycle : public QObject {
    Q_OBJECT
private slots:
    void offLoopbackRefusesWithoutToken()
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("BATCHPILOT_TOKEN");
        HeadlessProcess p({"--model", "builtin:echo", "--bind", "127.0.0.2"}, env);
        QVERIFY(!p.start());
        QVERIFY(p.waitForExit());
        QCOMPARE(p.exitCode(), 2);
        QVERIFY2(p.output().contains("token"), qPrintable(p.output()));
    }

    void tokenRequiredOnEveryRouteButHealth_data()
    {
        QTest::addColumn<bool>("fromEnvironment");
        QTest::newRow("--token") << false;
        QTest::newRow("BATCHPILOT_TOKEN") << true;
    }
    void tokenRequiredOnEveryRouteButHealth()
    {
        QFETCH(bool, fromEnvironment);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        QStringList args{"--model", "builtin:echo", "--bind", "127.0.0.2"};
        if (fromEnvironment)
            env.insert("BATCHPILOT_TOKEN", "s3cret");
        else
            args << "--token"
                 << "s3cret";
        HeadlessProcess p(args, env);
        QVERIFY2(p.start(), qPrintable(p.output()));
        QCOMPARE(p.listeningLine(), QStringLiteral("listening on http://127.0.0.2:%1").arg(p.port()));
        const quint16 port = p.port();
        auto get = [&](const QByteArray &path, const QByteArray &auth) {
            HttpConnection c(port, QStringLiteral("127.0.0.2"));
            QList<QPair<QByteArray, QByteArray>> headers;
            if (!auth.isEmpty())
                headers.append({"Authorization", auth});
            c.send("GET", path, {}, headers);
            return c.read();
        };
        QCOMPARE(get("/v2/health/live", {}).status, 200);
        QCOMPARE(get("/v2/health/ready", {}).status, 200);
        for (const QByteArray path :
             {"/v1/config", "/v2", "/metrics", "/v1/stats", "/v2/models/echo", "/nope"}) {
            const HttpResponse r = get(path, {});
            QCOMPARE(r.status, 401);
            QCOMPARE(r.header("www-authenticate"), QByteArray("Bearer"));
            QVERIFY(r.json().value("error").isString());
            QCOMPARE(get(path, "Bearer wrong").status, 401);
            QCOMPARE(get(path, "Basic czNjcmV0").status, 401);
        }
        QCOMPARE(get("/v1/config", "Bearer s3cret").status, 200);
        QCOMPARE(get("/metrics", "bearer s3cret").status, 200); // the scheme is case-insensitive
        QCOMPARE(get("/nope", "Bearer s3cret").status, 404);
        { // with a token, any Host is served (the token is the protection)
            HttpConnection c(port, QStringLiteral("127.0.0.2"));
            c.send("GET", "/v1/config", {}, {{"Authorization", "Bearer s3cret"}, {"Host", "rebind.example"}});
            QCOMPARE(c.read().status, 200);
        }
        HttpConnection c(port, QStringLiteral("127.0.0.2"));
        c.send("POST", "/v1/infer", inferBody({1, 2}), {{"Authorization", "Bearer s3cret"}});
        QCOMPARE(c.read().status, 200);
        QVERIFY(p.stop(SIGTERM));
        QCOMPARE(p.exitCode(), 0);
    }

    void gracefulShutdownAnswersQueuedWork_data()
    {
        QTest::addColumn<int>("signal");
        QTest::newRow("SIGTERM") << int(SIGTERM);
        QTest::newRow("SIGINT") << int(SIGINT);
    }
    void gracefulShutdownAnswersQueuedWork()
    {
        QFETCH(int, signal);
        HeadlessProcess p({"--model", "builtin:echo"});
        QVERIFY2(p.start(), qPrintable(p.output()));
        const quint16 port = p.port();
        // A static batch of 4 that will never fill: only the drain runs it.
        QCOMPARE(
            putConfig(port, {{"policy", "static"}, {"static_batch_size", 4}, {"static_flush_on_drain", true}})
                .status,
            200);
        HttpConnection waiting(port);
        waiting.send("POST", "/v1/infer", inferBody({3, 1, 4}));
        QVERIFY(waitForQueueDepth(port, 1));
        QVERIFY(p.stop(signal));
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 0);
        QVERIFY2(p.output().contains("draining"), qPrintable(p.output()));
        const HttpResponse r = waiting.read();
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value("batch").toObject().value("dispatch_reason").toString(),
                 QStringLiteral("drain"));
        QCOMPARE(r.json().value("output").toObject().value("tokens").toArray(), QJsonArray({3, 1, 4}));
    }

    // A script may signal the server as soon as it reads the listening
    // line: the signal is watched from before that line, so even then it
    // drains and exits 0 (a SIGTERM that came before the watcher killed the
    // process, exit status 15, on a busy machine). A few times over, to
    // give the race its chances.
    void aSignalRightAfterTheListeningLineDrains()
    {
        for (int i = 0; i < 6; ++i) {
            HeadlessProcess p({"--model", "builtin:echo"});
            QVERIFY2(p.start(), qPrintable(p.output()));
            QVERIFY(p.stop(SIGTERM));
            QCOMPARE(p.exitStatus(), QProcess::NormalExit);
            QCOMPARE(p.exitCode(), 0);
            QVERIFY2(p.output().contains("SIGTERM: draining"), qPrintable(p.output()));
        }
    }

    void portInUse()
    {
        HeadlessProcess first({"--model", "builtin:echo"});
        QVERIFY(first.start());
        HeadlessProcess second({"--model", "builtin:echo", "--port", QString::number(first.port())});
        QVERIFY(!second.start());
        QVERIFY(second.waitForExit());
        QCOMPARE(second.exitCode(), 2);
        QVERIFY2(second.output().contains("cannot listen"), qPrintable(second.output()));
    }
};

QTEST_GUILESS_MAIN(TestRestLifecycle)
#include "test_rest_lifecycle.moc"
