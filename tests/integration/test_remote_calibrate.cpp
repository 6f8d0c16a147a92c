// `batchpilot calibrate --target URL`, as the real
// binary:
//  - against a real `batchpilot --headless` serving builtin:tiny-decoder
//    (preset test, policy continuous) that the client is told nothing
//    about: the plan it prints (requests, longest duration) is what it
//    sends (the server's own batchpilot_requests_total grows by exactly
//    that), the server's settings are read from GET /v1/config and
//    /v1/models, every term is printed with its error, the calibration is
//    stored keyed by target and listed by --list, and --session ID refines
//    it from a recorded remote replay of the same server;
//  - Ctrl+C keeps what was measured: against a stand-in server that
//    answers every one-token prompt at once and never answers a decode
//    request, SIGINT once the decode round has started ends the probe,
//    fits the prefill rows and stores them, marked stopped early;
//  - --server-config FILE takes the settings from an exported file, and
//    bad flags are refused with the flag named.
#include "headless_process.h"
#include "http_client.h"
#include "rest_test_util.h"

#include "tests/process_run.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>

using bp::test::runProcess;

namespace {

double counter(const QByteArray &metrics, const QByteArray &name)
{
    double sum = 0;
    for (const QByteArray &line : metrics.split('\n'))
        if (line.startsWith(name + ' ') || line.startsWith(name + '{'))
            sum += line.mid(line.lastIndexOf(' ') + 1).toDouble();
    return sum;
}

QJsonObject exported(const QString &db, const QString &id)
{
    const auto r = runProcess(batchpilotExecutable(), {"calibrate", "--db", db, "--export", id});
    return QJsonDocument::fromJson(r.out.toUtf8()).object();
}

// Answers POST /v1/completions asking for at most 2 tokens at once (a
// token event each, usage, [DONE]): the warm-up and the prefill rounds;
// anything longer is held and never answered. GET gets 404. Counts the
// requests it answered and holds.
class PrefillOnlyServer : public QObject {
public:
    PrefillOnlyServer()
    {
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = m_server.nextPendingConnection())
                connect(s, &QTcpSocket::readyRead, this, [this, s] { onData(s); });
        });
        m_server.listen(QHostAddress::LocalHost);
    }
    quint16 port() const { return m_server.serverPort(); }
    int held = 0;
    int answered = 0;

private:
    void onData(QTcpSocket *s)
    {
        QByteArray &buf = m_buffers[s];
        buf += s->readAll();
        for (;;) {
            const qsizetype head = buf.indexOf("\r\n\r\n");
            if (head < 0)
                return;
            const qsizetype cl = buf.toLower().indexOf("content-length:");
            const int length = cl >= 0 && cl < head
                                   ? buf.mid(cl + 15, buf.indexOf("\r\n", cl) - cl - 15).trimmed().toInt()
                                   : 0;
            if (buf.size() < head + 4 + length)
                return;
            const bool post = buf.startsWith("POST");
            const QJsonObject body = QJsonDocument::fromJson(buf.mid(head + 4, length)).object();
            buf.remove(0, head + 4 + length);
            if (!post) {
                s->write("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
                continue;
            }
            const int tokens = body.value("max_tokens").toInt();
            if (tokens > 2) {
                ++held;
                continue;
            }
            ++answered;
            QByteArray sse;
            for (int i = 0; i < tokens; ++i)
                sse += "data: {\"choices\":[{\"index\":0,\"text\":\"t\",\"finish_reason\":null}]}\n\n";
            sse += "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":" +
                   QByteArray::number(tokens) + "}}\n\ndata: [DONE]\n\n";
            s->write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
                     QByteArray::number(sse.size()) + "\r\n\r\n" + sse);
        }
    }

    QTcpServer m_server;
    QHash<QTcpSocket *, QByteArray> m_buffers;
};

} // namespace

class TestRemoteCalibrate : public QObject {
    Q_OBJECT
private slots:
    void calibratesAHeadlessBatchPilot()
    {
        QTemporaryDir dir;
        const QString config = dir.filePath("continuous.json");
        {
            QFile f(config);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(R"({"policy": "continuous", "continuous": {"max_num_seqs": 8}})");
        }
        HeadlessProcess server({"--model", "builtin:tiny-decoder", "--preset", "test", "--threads", "1",
                                "--device", "cpu", "--config", config});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const QString url = QStringLiteral("http://127.0.0.1:%1").arg(server.port());
        const QString db = dir.filePath("client.sqlite");
        const double before =
            counter(httpRequest(server.port(), "GET", "/metrics").body, "batchpilot_requests_total");

        const auto r =
            runProcess(batchpilotExecutable(),
                       {"calibrate", "--db", db, "--target", url, "--model", "builtin:tiny-decoder",
                        "--quick", "--max-concurrency", "4", "--max-duration", "120"},
                       180000);
        QVERIFY2(r.code == 0, qPrintable(r.err + r.out));
        // The plan, printed before it starts: its size and its bound.
        const auto plan = QRegularExpression(R"(: (\d+) requests, at most (\d+) s)").match(r.err);
        QVERIFY2(plan.hasMatch(), qPrintable(r.err));
        const int planned = plan.captured(1).toInt();
        QVERIFY(planned > 10);
        QVERIFY(plan.captured(2).toInt() <= 120);
        QVERIFY2(r.err.contains("calibrate: server batchpilot"), qPrintable(r.err));
        // Exactly what it said it would send reached the server.
        const double after =
            counter(httpRequest(server.port(), "GET", "/metrics").body, "batchpilot_requests_total");
        QCOMPARE(after - before, double(planned));
        // Every term with its error; the server's settings as read.
        for (const char *term :
             {"request", "step", "per_sequence", "per_token", "per_attention", "per_decode_context"})
            QVERIFY2(
                r.out.contains(QRegularExpression(QStringLiteral("\\n  %1 +[0-9.e+-]+ us  \\+- ").arg(term))),
                qPrintable(r.out));
        QVERIFY2(r.out.contains("fit error over"), qPrintable(r.out));
        QVERIFY2(r.out.contains("server settings (GET /v1/config + GET /v1/models): policy=continuous, "),
                 qPrintable(r.out));
        QVERIFY(r.out.contains("continuous.max_num_seqs=8"));
        QVERIFY2(r.out.contains(QStringLiteral("probe: %1 requests (0 failed)").arg(planned)),
                 qPrintable(r.out));

        // Stored keyed by target, listed.
        const auto list = runProcess(batchpilotExecutable(), {"calibrate", "--db", db, "--list"});
        QCOMPARE(list.code, 0);
        QVERIFY2(list.out.contains(url) && list.out.contains("batchpilot"), qPrintable(list.out));
        const QJsonObject c = exported(db, "1");
        const QJsonObject remote = c.value("remote").toObject();
        QCOMPARE(remote.value("url").toString(), url);
        QCOMPARE(remote.value("server").toString(), QStringLiteral("batchpilot"));
        QCOMPARE(remote.value("probe").toObject().value("requests").toInt(), planned);
        QCOMPARE(remote.value("settings").toObject().value("max_model_len").toInt(), 255);
        QCOMPARE(remote.value("prefill_chunk").toInt(), 128);
        QCOMPARE(remote.value("terms").toArray().size(), 6);
        QVERIFY(remote.value("observations").toArray().size() >= 10);
        QCOMPARE(c.value("model").toString(), QStringLiteral("builtin:tiny-decoder"));
        QCOMPARE(c.value("device").toString(), QStringLiteral("remote"));

        // --session ID: a remote replay of that server refines it.
        QVERIFY(runProcess(batchpilotExecutable(), {"import-trace", "--db", db, "--sample"}).code == 0);
        const auto replay = runProcess(batchpilotExecutable(),
                                       {"replay", "1", "--trace", "--db", db, "--target", url, "--protocol",
                                        "openai", "--model", "builtin:tiny-decoder", "--limit", "12",
                                        "--max-new-tokens", "16", "--max-length", "200", "--speed", "20"},
                                       180000);
        QVERIFY2(replay.code == 0, qPrintable(replay.err + replay.out));
        const auto sessionId = QRegularExpression(R"(remote session (\d+))").match(replay.out);
        QVERIFY2(sessionId.hasMatch(), qPrintable(replay.out));
        const auto refined =
            runProcess(batchpilotExecutable(), {"calibrate", "--db", db, "--target", url, "--model",
                                                "builtin:tiny-decoder", "--session", sessionId.captured(1)});
        QVERIFY2(refined.code == 0, qPrintable(refined.err + refined.out));
        QVERIFY2(refined.out.contains("calibration 2:") &&
                     refined.out.contains("+ session " + sessionId.captured(1)),
                 qPrintable(refined.out));
        QVERIFY2(refined.out.contains("session ("), qPrintable(refined.out)); // its rows' error line
        QVERIFY(exported(db, "2").value("remote").toObject().value("observations").toArray().size() >
                remote.value("observations").toArray().size());
    }

    // calibrate -> tune -> apply -> verify against one headless BatchPilot,
    // the client told nothing of its settings: the pick is printed in the
    // server's syntax beside its current settings, --apply sends it (the
    // server's GET /v1/config then carries every changed key), and the
    // verification replays the same arrivals into the server, stored in the
    // tuning with predicted and measured figures.
    void calibrateTuneApplyVerify()
    {
        QTemporaryDir dir;
        const QString config = dir.filePath("continuous.json");
        {
            QFile f(config);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(R"({"policy": "continuous"})");
        }
        HeadlessProcess server({"--model", "builtin:tiny-decoder", "--preset", "test", "--threads", "1",
                                "--device", "cpu", "--config", config});
        QVERIFY2(server.start(), qPrintable(server.output()));
        const QString url = QStringLiteral("http://127.0.0.1:%1").arg(server.port());
        const QString db = dir.filePath("client.sqlite");
        const QStringList target{"--db", db, "--target", url, "--model", "builtin:tiny-decoder"};
        const auto cal =
            runProcess(batchpilotExecutable(),
                       QStringList{"calibrate", "--quick", "--max-concurrency", "4"} + target, 180000);
        QVERIFY2(cal.code == 0, qPrintable(cal.err + cal.out));
        // Then the operator sets it badly: every request waits 0.4 s for
        // company, so no TTFT bound under that is met.
        QCOMPARE(putConfig(server.port(),
                           {{"policy", "dynamic"}, {"max_batch_size", 16}, {"max_queue_delay_us", 400000}})
                     .status,
                 200);
        QVERIFY(runProcess(batchpilotExecutable(), {"import-trace", "--db", db, "--sample"}).code == 0);
        const QStringList tuneArgs = QStringList{"tune",
                                                 "--trace",
                                                 "1",
                                                 "--limit",
                                                 "30",
                                                 "--length-scale",
                                                 "0.05",
                                                 "--speed",
                                                 "10",
                                                 "--slo",
                                                 "ttft_p99<=200ms",
                                                 "--budget",
                                                 "20",
                                                 "--instances",
                                                 "1",
                                                 "--jobs",
                                                 "1"} +
                                     target;

        // Without --apply: the pick in the server's syntax, nothing sent, not verified.
        const auto dry = runProcess(batchpilotExecutable(), tuneArgs, 180000);
        QVERIFY2(dry.code == 0, qPrintable(dry.err + dry.out));
        QVERIFY2(dry.out.contains("server's current ") &&
                     dry.out.contains("in the server's syntax (PUT /v1/config):"),
                 qPrintable(dry.out));
        QVERIFY(dry.out.contains("Not verified: --apply sends the pick"));
        QVERIFY2(QRegularExpression(R"(\n  server's current .* no\n)").match(dry.out).hasMatch(),
                 qPrintable(dry.out));
        QVERIFY2(!dry.out.contains("changes from the server's current settings: none"), qPrintable(dry.out));
        QCOMPARE(QJsonDocument::fromJson(httpRequest(server.port(), "GET", "/v1/config").body)
                     .object()
                     .value("max_queue_delay_us")
                     .toInt(),
                 400000);

        const auto tuned =
            runProcess(batchpilotExecutable(), tuneArgs + QStringList{"--apply", "--json"}, 180000);
        QVERIFY2(tuned.code == 0, qPrintable(tuned.err + tuned.out));
        const QJsonObject j = QJsonDocument::fromJson(tuned.out.toUtf8()).object();
        const QJsonObject t = j.value("target").toObject();
        QCOMPARE(t.value("url").toString(), url);
        QVERIFY(t.value("applied").toBool());
        QCOMPARE(t.value("current_config").toObject().value("max_queue_delay_us").toInt(), 400000);
        QVERIFY(t.value("current_predicted").toObject().contains("goodput_rps"));
        // The server now runs the pick: every knob of the recommendation.
        const QJsonObject pick = j.value("recommended").toObject().value("config").toObject();
        QVERIFY2(!pick.isEmpty(), qPrintable(tuned.out.left(2000)));
        QVERIFY(pick != t.value("current_config").toObject());
        const QJsonObject live =
            QJsonDocument::fromJson(httpRequest(server.port(), "GET", "/v1/config").body).object();
        for (const char *key : {"policy", "max_batch_size", "max_queue_delay_us", "instances"})
            QVERIFY2(live.value(QLatin1String(key)) == pick.value(QLatin1String(key)), key);
        QCOMPARE(live.value("continuous").toObject().value("max_num_seqs"),
                 pick.value("continuous").toObject().value("max_num_seqs"));
        // Verified on the server: a remote session of the same 30 arrivals.
        const QJsonObject v = j.value("verification").toObject();
        const int session = v.value("session_id").toInt();
        QVERIFY(session > 0);
        QCOMPARE(v.value("measured").toObject().value("requests").toInt(), 30);
        QVERIFY(v.value("measured").toObject().value("slo_met").toBool()); // the pick meets it for real
        const auto sessions = runProcess(batchpilotExecutable(), {"sessions", "--db", db, "--json"});
        bool remote = false;
        for (const QJsonValue s : QJsonDocument::fromJson(sessions.out.toUtf8()).array())
            if (s.toObject().value("id").toInt() == session)
                remote = s.toObject().value("kind").toString() == "remote" &&
                         s.toObject().value("target_url").toString() == url;
        QVERIFY2(remote, qPrintable(sessions.out.left(3000)));
    }

    void ctrlCKeepsWhatWasMeasured()
    {
        PrefillOnlyServer standIn;
        QTemporaryDir dir;
        const QString db = dir.filePath("client.sqlite");
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(batchpilotExecutable(),
                {"calibrate", "--db", db, "--target",
                 QStringLiteral("http://127.0.0.1:%1").arg(standIn.port()), "--model", "m", "--server",
                 "sglang", "--quick", "--max-concurrency", "4", "--max-length", "1024"});
        QByteArray out;
        // The test's event loop serves the stand-in while it waits for the
        // decode round to be on the wire (its request held, never answered).
        QTRY_VERIFY_WITH_TIMEOUT((out += p.readAll(), out.contains("round 8/") && standIn.held > 0), 60000);
        QCOMPARE(p.state(), QProcess::Running);
        ::kill(pid_t(p.processId()), SIGINT);
        QTRY_VERIFY_WITH_TIMEOUT(p.state() == QProcess::NotRunning, 30000);
        out += p.readAll();
        QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, out.constData());
        QVERIFY2(out.contains("stopped early: fitted to what was measured"), out.constData());
        // SGLang's settings are read at /get_server_info, else /server_info:
        // the stand-in has neither.
        QVERIFY2(out.contains("the server's settings are not known: GET http://127.0.0.1:" +
                              QByteArray::number(standIn.port()) + "/server_info: HTTP 404"),
                 out.constData());
        const QJsonObject remote = exported(db, "1").value("remote").toObject();
        const QJsonObject probe = remote.value("probe").toObject();
        QVERIFY(probe.value("interrupted").toBool());
        QCOMPARE(probe.value("failed").toInt(), standIn.held);
        for (const QJsonValue row : remote.value("observations").toArray())
            QCOMPARE(row.toArray().first().toString(), QStringLiteral("prefill"));
        QCOMPARE(remote.value("observations").toArray().size(),
                 standIn.answered - 1); // the warm-up not fitted
    }

    void serverConfigFileAndBadFlags()
    {
        PrefillOnlyServer standIn;
        QTemporaryDir dir;
        const QString file = dir.filePath("vllm.sh");
        {
            QFile f(file);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 64 --max-model-len 2048 "
                    "--max-num-batched-tokens 1024 --enable-chunked-prefill\n");
        }
        const QString url = QStringLiteral("http://127.0.0.1:%1").arg(standIn.port());
        const QString db = dir.filePath("c.sqlite");
        // The file's settings are taken; the plan fits its max_model_len.
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        p.start(batchpilotExecutable(), {"calibrate", "--db", db, "--target", url, "--model", "m",
                                         "--server-config", file, "--quick", "--max-concurrency", "2"});
        QByteArray out;
        QTRY_VERIFY_WITH_TIMEOUT((out += p.readAll(), standIn.held > 0), 60000);
        ::kill(pid_t(p.processId()), SIGINT);
        QTRY_VERIFY_WITH_TIMEOUT(p.state() == QProcess::NotRunning, 30000);
        out += p.readAll();
        QVERIFY2(p.exitCode() == 0, out.constData());
        QVERIFY2(out.contains("server settings (file " + file.toUtf8() + "): policy=continuous, "),
                 out.constData());
        QVERIFY(out.contains("continuous.max_num_seqs=64"));
        QVERIFY2(out.contains("prompt chunk per step: 1024"), out.constData());
        const QJsonObject settings =
            exported(db, "1").value("remote").toObject().value("settings").toObject();
        QCOMPARE(settings.value("max_model_len").toInt(), 2048);

        for (const QStringList &bad : {QStringList{"--protocol", "grpc"}, QStringList{"--server", "nginx"},
                                       QStringList{"--max-concurrency", "0"}}) {
            const auto r =
                runProcess(batchpilotExecutable(),
                           QStringList{"calibrate", "--db", db, "--target", url, "--model", "m"} + bad);
            QCOMPARE(r.code, 2);
            QVERIFY2(r.err.contains(bad.first()), qPrintable(r.err));
        }
        const auto noModel = runProcess(batchpilotExecutable(), {"calibrate", "--db", db, "--target", url});
        QCOMPARE(noModel.code, 2);
        QVERIFY(noModel.err.contains("--model NAME"));
        const auto notRemote =
            runProcess(batchpilotExecutable(), {"calibrate", "--db", db, "--server", "vllm"});
        QCOMPARE(notRemote.code, 2);
        QVERIFY(notRemote.err.contains("--server applies to a remote calibration"));
    }
};

QTEST_GUILESS_MAIN(TestRemoteCalibrate)
#include "test_remote_calibrate.moc"
