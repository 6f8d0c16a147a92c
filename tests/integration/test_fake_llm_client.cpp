// What `batchpilot calibrate --target URL` sends to, and reads from, each
// kind of server, against tools/fake_llm_server.py (its vLLM / TGI / SGLang
// flavours; test_fake_llm_server checks the fit against the server's truth,
// this file the client's side of the conversation):
//  - TGI with --protocol openai: the completions prompt goes as text (TGI's
//    /v1/completions takes no token ids: 422), so the probe succeeds;
//  - the bodies as the server received them (--log-requests): vLLM gets
//    "ignore_eos": true and "min_tokens" = max_tokens, SGLang "ignore_eos",
//    TGI neither (its OpenAI routes have no such field);
//  - SGLang's settings are read from GET /get_server_info (they were "not
//    published"), and the simulation of the server starts from them;
//  - the mixed round leaves room for its prompts below the running cap the
//    scrapes showed (16 streams against max_num_seqs 16 stalled the first
//    prompt and never sent the rest): every request of the plan, as the
//    probe changed it, is sent, and each prompt gives a mixed row.
// Runs when python3 is on the PATH (skipped otherwise).
#include "fake_llm_process.h"
#include "headless_process.h"

#include "tests/process_run.h"

#include <QDeadlineTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>

using bp::test::runProcess;

namespace {

// The number of requests the printed plan announced ("calibrate: probing
// URL (...): N requests, at most S s"); -1 when not printed.
int plannedRequests(const Calibrated &c)
{
    static const QRegularExpression plan(QStringLiteral("calibrate: probing .*: (\\d+) requests, at most"));
    const auto m = plan.match(c.run.err);
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

// The JSON lines of a --log-requests file.
QList<QJsonObject> jsonLines(const QString &path)
{
    QList<QJsonObject> out;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return out;
    for (const QByteArray &line : f.readAll().split('\n'))
        if (!line.trimmed().isEmpty())
            out.append(QJsonDocument::fromJson(line).object());
    return out;
}

// "the plan is now N requests" from a progress line; -1 when not printed.
int replannedRequests(const Calibrated &c)
{
    static const QRegularExpression now(QStringLiteral("the plan is now (\\d+) requests"));
    const auto m = now.match(c.run.err);
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

QString why(const Calibrated &c, FakeLlmServer &server)
{
    return QStringLiteral("calibrate exited %1:\n%2\n%3\nserver:\n%4")
        .arg(c.run.code)
        .arg(c.run.err, c.run.out.left(2000), server.output());
}

} // namespace

class TestFakeLlmClient : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("python3")).isEmpty())
            QSKIP("python3 is not on the PATH: the fake LLM server cannot run");
        QVERIFY2(!qEnvironmentVariable("BATCHPILOT_SOURCE_DIR").isEmpty(),
                 "BATCHPILOT_SOURCE_DIR is not set (bp_add_test sets it)");
    }

    // TGI's /v1/completions takes a string prompt only: token ids were 422
    // for every request ("33 of 33 requests failed"). The prompt now goes as
    // text, one word per token, and the server counts it as that many.
    void tgiTakesTheCompletionsPromptAsText()
    {
        QTemporaryDir dir;
        FakeLlmServer server({"--flavour", "tgi", "--max-num-seqs", "8"});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const Calibrated c = calibrateFake(dir.filePath("c.sqlite"), server.url(),
                                           {"--protocol", "openai", "--quick", "--max-concurrency", "4"});
        QVERIFY2(!c.remote.isEmpty(), qPrintable(why(c, server)));
        QCOMPARE(c.remote.value("server").toString(), QStringLiteral("tgi"));
        const QJsonObject probe = c.remote.value("probe").toObject();
        QCOMPARE(probe.value("failed").toInt(), 0);
        QCOMPARE(probe.value("requests").toInt(), plannedRequests(c)); // every planned request went out
        QVERIFY2(c.run.err.contains("completions prompt as text"), qPrintable(c.run.err));
        QVERIFY2(server.stop(), qPrintable(server.output()));
    }

    // What each kind of server receives, logged by the server itself: the
    // decode rounds' answers must run to max_tokens, so vLLM and SGLang are
    // asked to ignore EOS (vLLM also min_tokens); TGI is not (its OpenAI
    // routes have no ignore_eos), and gets its prompt as text.
    void bodiesPerServerKind_data()
    {
        QTest::addColumn<QString>("flavour");
        QTest::addColumn<QString>("protocol");
        QTest::newRow("vllm completions") << "vllm"
                                          << "openai";
        QTest::newRow("vllm chat") << "vllm"
                                   << "openai-chat";
        QTest::newRow("sglang completions") << "sglang"
                                            << "openai";
        QTest::newRow("tgi completions") << "tgi"
                                         << "openai";
    }
    void bodiesPerServerKind()
    {
        QFETCH(QString, flavour);
        QFETCH(QString, protocol);
        QTemporaryDir dir;
        const QString log = dir.filePath("requests.jsonl");
        FakeLlmServer server({"--flavour", flavour, "--max-num-seqs", "8", "--log-requests", log});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const Calibrated c = calibrateFake(dir.filePath("c.sqlite"), server.url(),
                                           {"--protocol", protocol, "--quick", "--max-concurrency", "4"});
        QVERIFY2(!c.remote.isEmpty(), qPrintable(why(c, server)));
        QCOMPARE(c.remote.value("server").toString(), flavour); // recognised from /metrics
        QVERIFY2(server.stop(), qPrintable(server.output()));
        const QList<QJsonObject> bodies = jsonLines(log);
        QCOMPARE(bodies.size(), c.remote.value("probe").toObject().value("requests").toInt());
        const bool chat = protocol == "openai-chat";
        for (const QJsonObject &b : bodies) {
            const QString line = QString::fromUtf8(QJsonDocument(b).toJson(QJsonDocument::Compact));
            const int maxTokens = b.value(chat ? "max_completion_tokens" : "max_tokens").toInt();
            QVERIFY2(maxTokens >= 1, qPrintable(line));
            if (flavour == "tgi") {
                QVERIFY2(!b.contains("ignore_eos") && !b.contains("min_tokens"), qPrintable(line));
                QVERIFY2(b.value("prompt").isString(), qPrintable(line));
                continue;
            }
            QVERIFY2(b.value("ignore_eos") == QJsonValue(true), qPrintable(line));
            if (flavour == "vllm")
                QVERIFY2(b.value("min_tokens").toInt() == maxTokens, qPrintable(line));
            else
                QVERIFY2(!b.contains("min_tokens"), qPrintable(line));
            if (!chat)
                QVERIFY2(b.value("prompt").isArray(), qPrintable(line));
        }
    }

    void sglangSettingsAreRead()
    {
        QTemporaryDir dir;
        FakeLlmServer server({"--flavour", "sglang", "--max-running-requests", "6", "--chunked-prefill-size",
                              "512", "--max-prefill-tokens", "2048", "--max-total-tokens", "20000"});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const Calibrated c = calibrateFake(dir.filePath("c.sqlite"), server.url(),
                                           {"--protocol", "openai", "--quick", "--max-concurrency", "4"});
        QVERIFY2(!c.remote.isEmpty(), qPrintable(why(c, server)));
        QVERIFY2(!c.run.err.contains("not known"), qPrintable(c.run.err));
        const QJsonObject settings = c.remote.value("settings").toObject();
        QVERIFY2(settings.value("source").toString().startsWith("GET /get_server_info"),
                 qPrintable(QJsonDocument(settings).toJson()));
        const QJsonObject sglang = settings.value("settings").toObject();
        QCOMPARE(sglang.value("max_running_requests").toInt(), 6);
        QCOMPARE(sglang.value("chunked_prefill_size").toInt(), 512);
        QCOMPARE(sglang.value("max_prefill_tokens").toInt(), 2048);
        QCOMPARE(sglang.value("max_total_tokens").toInt(), 20000);
        QCOMPARE(settings.value("kv_capacity_tokens").toInt(), 20000);
        QCOMPARE(settings.value("max_model_len").toInt(), 4096);
        const QJsonObject knobs = settings.value("knobs").toObject();
        QCOMPARE(knobs.value("continuous.max_num_seqs").toInt(), 6);
        QCOMPARE(c.remote.value("prefill_chunk").toInt(), 512); // the rows count 512-token chunks
        QVERIFY2(server.stop(), qPrintable(server.output()));
    }

    void mixedRoundLeavesRoomBelowTheRunningCap_data()
    {
        QTest::addColumn<QString>("flavour");
        QTest::addColumn<QStringList>("plan");
        QTest::addColumn<int>("cap");
        QTest::addColumn<int>("prompts");
        // the full plan at 32: 16 streams, the vLLM default max_num_seqs 16
        QTest::newRow("vllm full 32") << "vllm" << QStringList{"--max-concurrency", "32"} << 16 << 6;
        // --quick at 16: 4 streams against a cap of 4
        QTest::newRow("sglang quick")
            << "sglang" << QStringList{"--quick", "--max-concurrency", "16"} << 4 << 2;
        QTest::newRow("tgi quick") << "tgi" << QStringList{"--quick", "--max-concurrency", "16"} << 4 << 2;
    }
    void mixedRoundLeavesRoomBelowTheRunningCap()
    {
        QFETCH(QString, flavour);
        QFETCH(QStringList, plan);
        QFETCH(int, cap);
        QFETCH(int, prompts);
        QTemporaryDir dir;
        FakeLlmServer server({"--flavour", flavour, "--max-num-seqs", QString::number(cap)});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const Calibrated c =
            calibrateFake(dir.filePath("c.sqlite"), server.url(), QStringList{"--protocol", "openai"} + plan);
        QVERIFY2(!c.remote.isEmpty(), qPrintable(why(c, server)));
        QVERIFY2(server.stop(), qPrintable(server.output()));
        QVERIFY2(c.remote.value("limits").toObject().value("running_is_cap").toBool(), qPrintable(c.run.err));
        // The mixed round's progress line says what changed.
        const QString fewer = QStringLiteral("%1 streams, not %2: the server ran at most %2 sequences while "
                                             "requests waited")
                                  .arg(cap - 1)
                                  .arg(cap);
        QVERIFY2(c.run.err.contains(fewer), qPrintable(c.run.err));
        // One stream fewer than the plan printed first, and every request of
        // that plan went out and was answered.
        const QJsonObject probe = c.remote.value("probe").toObject();
        QCOMPARE(replannedRequests(c), plannedRequests(c) - 1);
        QCOMPARE(probe.value("requests").toInt(), replannedRequests(c));
        QCOMPARE(probe.value("failed").toInt(), 0);
        QVERIFY2(!c.run.err.contains("planned requests were sent"), qPrintable(c.run.err));
        QVERIFY2(probe.value("plan").toString().contains("changed while it ran: mixed: " + fewer),
                 qPrintable(probe.value("plan").toString()));
        // Each prompt ran beside the streams: a mixed row each, a few steps
        // long (the first prompt no longer waits out the streams' 256 steps).
        QCOMPARE(c.remote.value("phase_fit_error").toObject().value("mixed").toObject().value("observations"),
                 QJsonValue(prompts));
        for (const QJsonValue row : c.remote.value("observations").toArray())
            if (row.toArray().at(0).toString() == "mixed")
                QVERIFY2(row.toArray().at(2).toDouble() <= 16,
                         qPrintable(QJsonDocument(row.toArray()).toJson()));
    }
};

QTEST_GUILESS_MAIN(TestFakeLlmClient)
#include "test_fake_llm_client.moc"
