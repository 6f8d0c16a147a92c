// `batchpilot calibrate --target URL` against a ground truth (issue 34 item
// 4): tools/fake_llm_server.py, a fake vLLM / TGI / SGLang server in its
// own process whose continuous-batching scheduler and step cost are known
// exactly (it sleeps each step's cost on the wall clock: 4 ms per step,
// 20 us per prefill token, 60 us per running decode), written apart from
// engine/sched/server_models so that the fit is checked against the truth,
// not against BatchPilot's own model of a server.
//  - vLLM: the fitted per-step and per-token terms are within 25% of the
//    truth; the per-sequence term is printed beside its truth, not
//    asserted (issue 34 item 5); the settings read from
//    vllm:cache_config_info and /v1/models are the server's; every probe
//    request reached the server and succeeded; the limits BatchPilot saw
//    never exceed the server's (and its step log confirms them);
//  - TGI (openai-chat: TGI's /v1/completions takes no token ids) and
//    SGLang: the /metrics scrape reads running and waiting while the probe
//    runs: a cap of 4 running sequences is seen as a cap (requests waited).
// Runs when python3 is on the PATH (skipped otherwise).
#include "headless_process.h"
#include "http_client.h"

#include "tests/process_run.h"

#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <csignal>

using bp::test::runProcess;

namespace {

// The truth the fake server is started with (its flags' defaults).
constexpr double kStepS = 4e-3;
constexpr double kPrefillTokenS = 20e-6;
constexpr double kDecodeSeqS = 60e-6;

// tools/fake_llm_server.py in its own process: started with --port 0,
// ready once it printed "listening on http://127.0.0.1:PORT"; SIGTERM on
// stop, killed by the destructor if it still runs.
class FakeLlmServer {
public:
    explicit FakeLlmServer(const QStringList &args)
    {
        const QString source = qEnvironmentVariable("BATCHPILOT_SOURCE_DIR");
        m_process.setProgram(QStandardPaths::findExecutable(QStringLiteral("python3")));
        m_process.setArguments(
            QStringList{source + QStringLiteral("/tools/fake_llm_server.py"), "--port", "0"} + args);
    }
    ~FakeLlmServer()
    {
        if (m_process.state() != QProcess::NotRunning) {
            m_process.kill();
            m_process.waitForFinished(10000);
        }
    }

    bool start(int timeoutMs = 20000)
    {
        m_process.start();
        if (!m_process.waitForStarted(10000))
            return false;
        static const QRegularExpression line(QStringLiteral("^listening on http://127\\.0\\.0\\.1:(\\d+)$"),
                                             QRegularExpression::MultilineOption);
        QDeadlineTimer deadline(timeoutMs);
        while (!deadline.hasExpired()) {
            m_stdout += m_process.readAllStandardOutput();
            if (const auto m = line.match(QString::fromUtf8(m_stdout)); m.hasMatch()) {
                m_port = quint16(m.captured(1).toUInt());
                return m_port != 0;
            }
            if (m_process.state() == QProcess::NotRunning)
                return false;
            m_process.waitForReadyRead(int(std::max<qint64>(1, deadline.remainingTime())));
        }
        return false;
    }
    // SIGTERM; true when it exited with status 0.
    bool stop()
    {
        if (m_process.state() == QProcess::NotRunning)
            return false;
        ::kill(pid_t(m_process.processId()), SIGTERM);
        return m_process.waitForFinished(10000) && m_process.exitStatus() == QProcess::NormalExit &&
               m_process.exitCode() == 0;
    }
    quint16 port() const { return m_port; }
    QString url() const { return QStringLiteral("http://127.0.0.1:%1").arg(m_port); }
    QString output()
    {
        m_stdout += m_process.readAllStandardOutput();
        m_stderr += m_process.readAllStandardError();
        return QString::fromUtf8(m_stdout + m_stderr);
    }

private:
    QProcess m_process;
    QByteArray m_stdout, m_stderr;
    quint16 m_port = 0;
};

// A calibration's fitted term (seconds) by name; NaN when absent.
double term(const QJsonObject &remote, const QString &name)
{
    for (const QJsonValue t : remote.value("terms").toArray())
        if (t.toObject().value("name").toString() == name)
            return t.toObject().value("value_s").toDouble();
    return std::nan("");
}

double metric(const QByteArray &metrics, const QByteArray &name, const QByteArray &labelPart = {})
{
    double sum = 0;
    for (const QByteArray &line : metrics.split('\n'))
        if ((line.startsWith(name + ' ') || line.startsWith(name + '{')) && line.contains(labelPart))
            sum += line.mid(line.lastIndexOf(' ') + 1).toDouble();
    return sum;
}

// `calibrate --target URL ... --json` run to completion; its calibration's
// "remote" object, or a failure message in `why`.
QJsonObject calibrate(const QString &db, const QString &url, const QStringList &more, QString &why)
{
    const auto r = runProcess(batchpilotExecutable(),
                              QStringList{"calibrate", "--db", db, "--target", url, "--model", "fake-llm",
                                          "--scrape-interval", "50", "--json"} +
                                  more,
                              120000);
    if (r.code != 0) {
        why = QStringLiteral("calibrate exited %1:\n%2\n%3").arg(r.code).arg(r.err, r.out);
        return {};
    }
    const QJsonObject remote = QJsonDocument::fromJson(r.out.toUtf8()).object().value("remote").toObject();
    if (remote.isEmpty())
        why = QStringLiteral("no calibration JSON on stdout:\n%1\n%2").arg(r.err, r.out);
    return remote;
}

bool within(double value, double truth, double tolerance)
{
    return std::isfinite(value) && std::abs(value - truth) <= tolerance * truth;
}

} // namespace

class TestFakeLlmServer : public QObject {
    Q_OBJECT
private slots:
    void initTestCase()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("python3")).isEmpty())
            QSKIP("python3 is not on the PATH: the fake LLM server cannot run");
        QVERIFY2(!qEnvironmentVariable("BATCHPILOT_SOURCE_DIR").isEmpty(),
                 "BATCHPILOT_SOURCE_DIR is not set (bp_add_test sets it)");
    }

    void vllmCalibrationRecoversTheStepCost()
    {
        QTemporaryDir dir;
        const QString steps = dir.filePath("steps.jsonl");
        FakeLlmServer server({"--flavour",
                              "vllm",
                              "--max-num-seqs",
                              "16",
                              "--max-num-batched-tokens",
                              "1024",
                              "--chunked-prefill",
                              "on",
                              "--kv-tokens",
                              "65536",
                              "--max-model-len",
                              "4096",
                              "--step-ms",
                              QString::number(kStepS * 1e3),
                              "--prefill-us-per-token",
                              QString::number(kPrefillTokenS * 1e6),
                              "--decode-us-per-seq",
                              QString::number(kDecodeSeqS * 1e6),
                              "--log-steps",
                              steps});
        QVERIFY2(server.start(), qPrintable(server.output()));

        QString why;
        QElapsedTimer clock;
        clock.start();
        // The full plan at 16 at once: prompts up to 2048 (two chunks of the
        // 1024-token budget), decodes at 1..16 running.
        const QJsonObject remote = calibrate(
            dir.filePath("client.sqlite"), server.url(),
            {"--protocol", "openai", "--server", "vllm", "--max-concurrency", "16", "--max-duration", "60"},
            why);
        QVERIFY2(!remote.isEmpty(), qPrintable(why + server.output()));
        const double calibrateS = double(clock.elapsed()) / 1000;

        const double step = term(remote, "step"), perToken = term(remote, "per_token");
        const double perSequence = term(remote, "per_sequence");
        qInfo("fitted against the truth (%.1f s, %d requests): step %.1f us (truth %.1f), per_token %.2f us "
              "(truth %.2f per prefill token), request %.1f us, per_attention %.3g us",
              calibrateS, remote.value("probe").toObject().value("requests").toInt(), step * 1e6,
              kStepS * 1e6, perToken * 1e6, kPrefillTokenS * 1e6, term(remote, "request") * 1e6,
              term(remote, "per_attention") * 1e6);
        // Not asserted (issue 34 item 5): the truth is 60 us per running
        // decode; the fit's decode item costs s1 + s2, so s1's truth is
        // 60 - 20 = 40 us (a prefill's sequence costs nothing per sequence).
        qInfo("per_sequence fitted %.2f us: truth %.0f us per running decode = s1 + s2, so s1 = %.0f us "
              "(not asserted)",
              perSequence * 1e6, kDecodeSeqS * 1e6, (kDecodeSeqS - kPrefillTokenS) * 1e6);
        QVERIFY2(within(step, kStepS, 0.25), qPrintable(QStringLiteral("step %1 us").arg(step * 1e6)));
        QVERIFY2(within(perToken, kPrefillTokenS, 0.25),
                 qPrintable(QStringLiteral("per_token %1 us").arg(perToken * 1e6)));

        // Every request it sent reached the server and was answered in full.
        const QJsonObject probe = remote.value("probe").toObject();
        QCOMPARE(probe.value("failed").toInt(), 0);
        const QByteArray metrics = httpRequest(server.port(), "GET", "/metrics").body;
        QCOMPARE(metric(metrics, "vllm:request_success_total", "finished_reason=\"length\""),
                 double(probe.value("requests").toInt()));
        // What vLLM publishes of its settings was read: KV blocks x block
        // size from vllm:cache_config_info, max_model_len from /v1/models.
        QCOMPARE(remote.value("server").toString(), QStringLiteral("vllm"));
        const QJsonObject settings = remote.value("settings").toObject();
        QCOMPARE(settings.value("kv_capacity_tokens").toInt(), 65536);
        QCOMPARE(settings.value("max_model_len").toInt(), 4096);
        // The limits seen never exceed the server's: 16 running, 1024 tokens a step.
        const QJsonObject limits = remote.value("limits").toObject();
        QVERIFY2(limits.value("max_running").toDouble() > 0 && limits.value("max_running").toDouble() <= 16,
                 qPrintable(QJsonDocument(limits).toJson()));
        QVERIFY2(limits.value("tokens_per_step_bound").toDouble() <= 1024,
                 qPrintable(QJsonDocument(limits).toJson()));

        QVERIFY2(server.stop(), qPrintable(server.output()));
        // The server's own record of its steps: within its limits, at its cost.
        QFile log(steps);
        QVERIFY(log.open(QIODevice::ReadOnly));
        int rows = 0, late = 0;
        for (const QByteArray &line : log.readAll().split('\n')) {
            if (line.isEmpty())
                continue;
            const QJsonObject s = QJsonDocument::fromJson(line).object();
            ++rows;
            QVERIFY2(s.value("prefill_tokens").toInt() + s.value("decodes").toInt() <= 1024,
                     line.constData());
            QVERIFY2(s.value("running").toInt() <= 16, line.constData());
            const double cost = kStepS + kPrefillTokenS * s.value("prefill_tokens").toDouble() +
                                kDecodeSeqS * s.value("decodes").toDouble();
            QVERIFY2(std::abs(s.value("cost_ms").toDouble() - cost * 1e3) < 1e-3, line.constData());
            late += s.value("late_ms").toDouble() > 0 ? 1 : 0;
        }
        QVERIFY(rows > 100);
        qInfo("the server ran %d steps, %d of them more than 50 ms late", rows, late);
    }

    // TGI: running = tgi_batch_current_size, waiting = tgi_queue_size; its
    // /info gives max_batch_size. TGI's /v1/completions takes text only, so
    // the probe speaks openai-chat.
    void tgiScrapeReadsRunningAndWaiting()
    {
        QTemporaryDir dir;
        FakeLlmServer server({"--flavour", "tgi", "--max-num-seqs", "4", "--kv-tokens", "16384"});
        QVERIFY2(server.start(), qPrintable(server.output()));
        QString why;
        const QJsonObject remote =
            calibrate(dir.filePath("client.sqlite"), server.url(),
                      {"--protocol", "openai-chat", "--quick", "--max-concurrency", "16"}, why);
        QVERIFY2(!remote.isEmpty(), qPrintable(why + server.output()));
        QCOMPARE(remote.value("server").toString(), QStringLiteral("tgi")); // recognised from /metrics
        QCOMPARE(remote.value("probe").toObject().value("failed").toInt(), 0);
        const QJsonObject limits = remote.value("limits").toObject();
        // 16 streams at once against 4 running at most: 4 ran while the rest waited.
        QCOMPARE(limits.value("max_running").toDouble(), 4.0);
        QVERIFY2(limits.value("running_is_cap").toBool(), qPrintable(QJsonDocument(limits).toJson()));
        QCOMPARE(
            remote.value("settings").toObject().value("knobs").toObject().value("continuous.max_num_seqs"),
            QJsonValue(4));
        QVERIFY2(server.stop(), qPrintable(server.output()));
    }

    // SGLang: running = sglang:num_running_reqs, waiting =
    // sglang:num_queue_reqs, KV usage = sglang:token_usage.
    void sglangScrapeReadsRunningAndWaiting()
    {
        QTemporaryDir dir;
        FakeLlmServer server({"--flavour", "sglang", "--max-num-seqs", "4", "--kv-tokens", "16384"});
        QVERIFY2(server.start(), qPrintable(server.output()));
        QString why;
        const QJsonObject remote =
            calibrate(dir.filePath("client.sqlite"), server.url(),
                      {"--protocol", "openai", "--quick", "--max-concurrency", "16"}, why);
        QVERIFY2(!remote.isEmpty(), qPrintable(why + server.output()));
        QCOMPARE(remote.value("server").toString(), QStringLiteral("sglang"));
        QCOMPARE(remote.value("probe").toObject().value("failed").toInt(), 0);
        const QJsonObject limits = remote.value("limits").toObject();
        QCOMPARE(limits.value("max_running").toDouble(), 4.0);
        QVERIFY2(limits.value("running_is_cap").toBool(), qPrintable(QJsonDocument(limits).toJson()));
        // Tokens in flight over the KV usage: the server's 16384, give or take
        // its block rounding and the client's view of what is in flight.
        const double kv = limits.value("kv_capacity_tokens").toDouble();
        qInfo("KV capacity seen: %.0f tokens (truth 16384)", kv);
        QVERIFY2(within(kv, 16384, 0.25), qPrintable(QJsonDocument(limits).toJson()));
        QVERIFY2(server.stop(), qPrintable(server.output()));
    }
};

QTEST_GUILESS_MAIN(TestFakeLlmServer)
#include "test_fake_llm_server.moc"
