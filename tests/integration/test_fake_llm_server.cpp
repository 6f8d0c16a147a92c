// `batchpilot calibrate --target URL` against a ground truth:
// tools/fake_llm_server.py, a fake vLLM / TGI / SGLang server in its
// own process whose continuous-batching scheduler and step cost are known
// exactly (it sleeps each step's cost on the wall clock: 4 ms per step,
// 20 us per prefill token, 60 us per running decode), written apart from
// engine/sched/server_models so that the fit is checked against the truth,
// not against BatchPilot's own model of a server.
//  - vLLM: the fitted per-step and per-token terms are within 25% of the
//    truth; the per-sequence term is printed beside its truth, not
//    asserted; the settings read from
//    vllm:cache_config_info and /v1/models are the server's; every probe
//    request reached the server and succeeded; the limits BatchPilot saw
//    never exceed the server's (and its step log confirms them);
//  - TGI (openai-chat: TGI's /v1/completions takes no token ids) and
//    SGLang: the /metrics scrape reads running and waiting while the probe
//    runs: a cap of 4 running sequences is seen as a cap (requests waited).
//  - the whole loop against a vLLM flavour whose settings are too tight for
//    its load: calibrate, simulate (its scheduler, the probe's caps), tune,
//    restart with the pick, replay for real; the pick measures a goodput at
//    the SLO no lower than the current settings' beyond the run-to-run
//    noise, and the prediction holds on a trace not used to calibrate.
// Runs when python3 is on the PATH (skipped otherwise).
#include "fake_llm_process.h"
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
#include <QTextStream>

#include <algorithm>
#include <array>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <optional>
#include <random>

using bp::test::runProcess;

namespace {

// The truth the fake server is started with (its flags' defaults).
constexpr double kStepS = 4e-3;
constexpr double kPrefillTokenS = 20e-6;
constexpr double kDecodeSeqS = 60e-6;

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
    const Calibrated c = calibrateFake(db, url, more);
    if (c.run.code != 0)
        why = QStringLiteral("calibrate exited %1:\n%2\n%3").arg(c.run.code).arg(c.run.err, c.run.out);
    else if (c.remote.isEmpty())
        why = QStringLiteral("no calibration JSON on stdout:\n%1\n%2").arg(c.run.err, c.run.out);
    return c.remote;
}

bool within(double value, double truth, double tolerance)
{
    return std::isfinite(value) && std::abs(value - truth) <= tolerance * truth;
}

// The fake vLLM server's flags: these scheduler settings, the true step cost.
QStringList vllmServerArgs(int maxNumSeqs, int maxNumBatchedTokens, bool chunkedPrefill)
{
    return {"--flavour",
            "vllm",
            "--max-num-seqs",
            QString::number(maxNumSeqs),
            "--max-num-batched-tokens",
            QString::number(maxNumBatchedTokens),
            "--chunked-prefill",
            chunkedPrefill ? "on" : "off",
            "--step-ms",
            QString::number(kStepS * 1e3),
            "--prefill-us-per-token",
            QString::number(kPrefillTokenS * 1e6),
            "--decode-us-per-seq",
            QString::number(kDecodeSeqS * 1e6)};
}

// A synthetic trace in the plain format (docs/replay.md): Poisson arrivals
// at `rate` per second, inputs 50..400 tokens, outputs 16..96, all drawn
// from `seed` with mt19937_64 (whose output the standard fixes) and no
// std:: distribution (whose algorithms it does not), so the same seed
// writes the same file everywhere.
bool writeTrace(const QString &path, std::uint64_t seed, int requests, double rate)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Text))
        return false;
    std::mt19937_64 random(seed);
    const auto between = [&](int low, int high) {
        return low + int(random() % std::uint64_t(high - low + 1));
    };
    QTextStream out(&file);
    out << "arrival_s,input_tokens,output_tokens\n";
    double arrival = 0;
    for (int i = 0; i < requests; ++i) {
        const int input = between(50, 400);
        const int output = between(16, 96);
        out << QString::number(arrival, 'f', 6) << ',' << input << ',' << output << '\n';
        const double unit = double(random() >> 11) * 0x1.0p-53; // [0, 1)
        arrival += -std::log1p(-unit) / rate;
    }
    return out.status() == QTextStream::Ok;
}

// `batchpilot ARGS` to completion, its stdout (--json) as an object; empty
// with the reason in `why` when it failed or printed no JSON object.
QJsonObject runJson(const QStringList &args, QString &why, int timeoutMs = 120000)
{
    const auto r = runProcess(batchpilotExecutable(), args, timeoutMs);
    const QJsonObject json = QJsonDocument::fromJson(r.out.toUtf8()).object();
    if (r.code != 0 || json.isEmpty())
        why = QStringLiteral("batchpilot %1\nexited %2:\n%3\n%4")
                  .arg(args.join(' '))
                  .arg(r.code)
                  .arg(r.err, r.out);
    return r.code == 0 ? json : QJsonObject{};
}

// The figures a prediction is checked on: a replay's summary
// (comparison.b) and a tuning's "predicted" use the same names.
struct Figures {
    double throughput = 0, goodput = 0, ttftP50 = 0, ttftP99 = 0, tpotP50 = 0, tpotP99 = 0;
};

Figures figures(const QJsonObject &o)
{
    return {o.value("throughput_rps").toDouble(), o.value("goodput_rps").toDouble(),
            o.value("ttft_p50_ms").toDouble(),    o.value("ttft_p99_ms").toDouble(),
            o.value("tpot_p50_ms").toDouble(),    o.value("tpot_p99_ms").toDouble()};
}

QString describe(const Figures &f)
{
    return QStringLiteral("throughput %1/s, goodput %2/s, TTFT p50 %3 ms p99 %4 ms, TPOT p50 %5 ms p99 %6 ms")
        .arg(f.throughput, 0, 'f', 2)
        .arg(f.goodput, 0, 'f', 2)
        .arg(f.ttftP50, 0, 'f', 1)
        .arg(f.ttftP99, 0, 'f', 1)
        .arg(f.tpotP50, 0, 'f', 2)
        .arg(f.tpotP99, 0, 'f', 2);
}

// The median |predicted - measured| / measured over throughput, TTFT p50
// and p99, TPOT p50 and p99 (the measure a prediction is judged by).
double medianError(const Figures &predicted, const Figures &measured)
{
    const auto error = [](double p, double m) { return m > 0 ? std::abs(p - m) / m : HUGE_VAL; };
    std::array<double, 5> errors{
        error(predicted.throughput, measured.throughput), error(predicted.ttftP50, measured.ttftP50),
        error(predicted.ttftP99, measured.ttftP99), error(predicted.tpotP50, measured.tpotP50),
        error(predicted.tpotP99, measured.tpotP99)};
    std::sort(errors.begin(), errors.end());
    return errors[2];
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
        // The truth is 60 us per running decode; the fit's
        // decode item costs s1 + s2, so s1's truth is 60 - 20 = 40 us (a
        // prefill's sequence costs nothing per sequence). The plan's decode
        // rounds at 1..16 running separate it from the step term.
        const double perSequenceTruth = kDecodeSeqS - kPrefillTokenS;
        qInfo("per_sequence fitted %.2f us: truth %.0f us per running decode = s1 + s2, so s1 = %.0f us",
              perSequence * 1e6, kDecodeSeqS * 1e6, perSequenceTruth * 1e6);
        QVERIFY2(within(perSequence, perSequenceTruth, 0.25),
                 qPrintable(QStringLiteral("per_sequence %1 us").arg(perSequence * 1e6)));
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

    // The whole loop against a vLLM flavour started with
    // settings too tight for its load: calibrate from outside, simulate,
    // tune, restart with the pick, replay for real, and check the
    // prediction on a second trace that was not used to calibrate or tune.
    void theWholeLoopPicksWhatMeasuresBetter()
    {
        QElapsedTimer clock;
        clock.start();
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString db = dir.filePath("loop.sqlite");
        const QString slo = QStringLiteral("ttft_p99<=500ms,tpot_p99<=50ms");
        constexpr double kTtftBoundMs = 500, kTpotBoundMs = 50;

        // 1. Two traces of one shape from two seeds: A to calibrate and tune
        //    on, B held out to check the prediction. The load: a request
        //    holds a slot for its ~56 output tokens, a decode step of 4
        //    running costs 4 ms + 4 x 60 us, so 4 slots serve about 15 req/s;
        //    at 20 req/s they fall behind and TTFT grows to seconds, while
        //    16 or more slots serve it with TTFT in tens of ms.
        constexpr int kRequests = 200;
        constexpr double kRate = 20;
        QString why;
        qint64 trace[2] = {0, 0};
        for (int i = 0; i < 2; ++i) {
            const QString csv = dir.filePath(QStringLiteral("trace_%1.csv").arg(i));
            QVERIFY(writeTrace(csv, 34 + std::uint64_t(i), kRequests, kRate));
            const QJsonObject imported = runJson({"import-trace", csv, "--db", db, "--json"}, why);
            QVERIFY2(!imported.isEmpty(), qPrintable(why));
            QCOMPARE(imported.value("rows").toInt(), kRequests);
            trace[i] = imported.value("trace_id").toInteger();
            QVERIFY(trace[i] > 0);
        }
        const QString tuned = QString::number(trace[0]), heldOut = QString::number(trace[1]);

        // 2. The server's current settings: too tight for that load.
        constexpr int kCurrentSeqs = 4, kCurrentTokens = 256;
        std::optional<FakeLlmServer> server(std::in_place,
                                            vllmServerArgs(kCurrentSeqs, kCurrentTokens, true));
        QVERIFY2(server->start(), qPrintable(server->output()));

        // 3. Calibrate it from outside (the quick plan: ~35 requests, ~3 s).
        const QJsonObject calibration =
            runJson({"calibrate", "--target", server->url(), "--protocol", "openai", "--model", "fake-llm",
                     "--server", "vllm", "--quick", "--scrape-interval", "50", "--db", db, "--json"},
                    why);
        QVERIFY2(!calibration.isEmpty(), qPrintable(why + server->output()));
        const QString cal = QString::number(calibration.value("id").toInteger());
        QVERIFY(calibration.value("id").toInteger() > 0);
        qInfo("calibration %s: limits %s", qPrintable(cal),
              QJsonDocument(calibration.value("remote").toObject().value("limits").toObject())
                  .toJson(QJsonDocument::Compact)
                  .constData());

        // 4. The simulation runs vLLM's scheduler with the probe's caps: 4
        //    ran while requests waited; no step had more than 256 tokens.
        const QJsonObject simulated = runJson(
            {"replay", tuned, "--trace", "--simulate", "--calibration", cal, "--db", db, "--json"}, why);
        QVERIFY2(!simulated.isEmpty(), qPrintable(why));
        const QString serverModel = simulated.value("server_model").toString();
        qInfo("simulated as: %s", qPrintable(serverModel));
        QVERIFY2(serverModel.startsWith(QStringLiteral("vllm")), qPrintable(serverModel));
        const QJsonObject simulatedServer = simulated.value("config").toObject().value("server").toObject();
        QCOMPARE(simulatedServer.value("kind").toString(), QStringLiteral("vllm"));
        QCOMPARE(simulatedServer.value("max_num_seqs").toInt(), kCurrentSeqs);
        QCOMPARE(simulatedServer.value("max_num_batched_tokens").toInt(), kCurrentTokens);

        // 5. The current settings measured twice: the difference is the
        //    run-to-run noise. --config gives only the goodput bounds, so
        //    each session's goodput is counted at the SLO (docs/remote.md).
        const QString goodputFile = dir.filePath("goodput.json");
        {
            QFile f(goodputFile);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QJsonDocument(QJsonObject{{"goodput", QJsonObject{{"ttft_us", kTtftBoundMs * 1000},
                                                                      {"tpot_us", kTpotBoundMs * 1000}}}})
                        .toJson());
        }
        const auto replayForReal = [&](const QString &traceId) {
            const QJsonObject r = runJson({"replay", traceId, "--trace", "--target", server->url(),
                                           "--protocol", "openai", "--model", "fake-llm", "--max-concurrency",
                                           "128", "--config", goodputFile, "--db", db, "--json"},
                                          why);
            return r.value("comparison").toObject().value("b").toObject();
        };
        const auto checkMeasured = [&](const QJsonObject &b) {
            if (b.isEmpty())
                return QStringLiteral("no summary: ") + why + server->output();
            if (b.value("completed").toInt() != kRequests)
                return QStringLiteral("not every request completed: %1")
                    .arg(QString::fromUtf8(QJsonDocument(b).toJson()));
            if (b.value("goodput_slo_ms").toObject().value("ttft").toDouble() != kTtftBoundMs ||
                b.value("goodput_slo_ms").toObject().value("tpot").toDouble() != kTpotBoundMs)
                return QStringLiteral("goodput not counted at the SLO: %1")
                    .arg(QString::fromUtf8(QJsonDocument(b).toJson()));
            return QString();
        };
        const QJsonObject currentRun1 = replayForReal(tuned);
        QVERIFY2(checkMeasured(currentRun1).isEmpty(), qPrintable(checkMeasured(currentRun1)));
        const QJsonObject currentRun2 = replayForReal(tuned);
        QVERIFY2(checkMeasured(currentRun2).isEmpty(), qPrintable(checkMeasured(currentRun2)));
        const Figures current1 = figures(currentRun1), current2 = figures(currentRun2);
        const double currentGoodput = (current1.goodput + current2.goodput) / 2;
        const double noise = std::abs(current1.goodput - current2.goodput);
        qInfo("current settings measured: run 1 %s", qPrintable(describe(current1)));
        qInfo("current settings measured: run 2 %s", qPrintable(describe(current2)));
        qInfo("run-to-run noise in goodput at the SLO: %.2f req/s", noise);

        // 6. Tune on the remote calibration (no --target: it simulates the
        //    vLLM model from the calibration's settings).
        const QJsonObject tuning = runJson({"tune", "--trace", tuned, "--calibration", cal, "--slo", slo,
                                            "--no-verify", "--json", "--db", db},
                                           why);
        QVERIFY2(!tuning.isEmpty(), qPrintable(why));
        const QJsonObject current = tuning.value("current").toObject();
        const QJsonObject recommended = tuning.value("recommended").toObject();
        QVERIFY2(!current.isEmpty() && !recommended.isEmpty(),
                 qPrintable(QString::fromUtf8(QJsonDocument(tuning).toJson())));
        const QJsonObject currentServer = current.value("config").toObject().value("server").toObject();
        QCOMPARE(currentServer.value("kind").toString(), QStringLiteral("vllm"));
        QCOMPARE(currentServer.value("max_num_seqs").toInt(), kCurrentSeqs);
        const Figures currentPredicted = figures(current.value("predicted").toObject());
        const Figures pickPredicted = figures(recommended.value("predicted").toObject());
        const bool currentMeets = current.value("meets_slo").toBool();
        const bool pickMeets = recommended.value("predicted").toObject().value("slo_met").toBool();
        qInfo("tune (%d configs simulated): current %s meets the SLO: %s, keep: %s; pick %s meets it: %s",
              tuning.value("evaluated").toInt(), qPrintable(current.value("settings").toString()),
              currentMeets ? "yes" : "no", current.value("keep").toBool() ? "yes" : "no",
              qPrintable(recommended.value("label").toString()), pickMeets ? "yes" : "no");
        // When the current settings meet the SLO, a pick that meets it
        // exists (the current one at least).
        if (currentMeets) {
            QVERIFY(tuning.value("any_met").toBool());
            QVERIFY(pickMeets);
        }
        // Here they do not (the setup's premise), and the pick must.
        QVERIFY2(!currentMeets, "the setup's premise: 4 slots at 20 req/s miss the SLO");
        QVERIFY(!current.value("keep").toBool());
        QVERIFY2(pickMeets, qPrintable(QString::fromUtf8(QJsonDocument(recommended).toJson())));
        const QJsonObject pickServer = recommended.value("config").toObject().value("server").toObject();
        QCOMPARE(pickServer.value("kind").toString(), QStringLiteral("vllm"));
        const int pickSeqs = pickServer.value("max_num_seqs").toInt();
        const int pickTokens = pickServer.value("max_num_batched_tokens").toInt();
        const bool pickChunked = pickServer.value("enable_chunked_prefill").toBool();
        QVERIFY2(pickSeqs > 0 && pickTokens > 0,
                 qPrintable(QString::fromUtf8(QJsonDocument(pickServer).toJson())));

        // 7. Restart the server with the pick and replay the same trace.
        QVERIFY2(server->stop(), qPrintable(server->output()));
        server.emplace(vllmServerArgs(pickSeqs, pickTokens, pickChunked));
        QVERIFY2(server->start(), qPrintable(server->output()));
        const QJsonObject pickRun = replayForReal(tuned);
        QVERIFY2(checkMeasured(pickRun).isEmpty(), qPrintable(checkMeasured(pickRun)));
        const Figures pickMeasured = figures(pickRun);
        qInfo("current predicted: %s", qPrintable(describe(currentPredicted)));
        qInfo("current measured:  %s (mean of 2 runs' goodput %.2f)", qPrintable(describe(current1)),
              currentGoodput);
        qInfo("  median error %.1f%%", 100 * medianError(currentPredicted, current1));
        qInfo("pick predicted:    %s", qPrintable(describe(pickPredicted)));
        qInfo("pick measured:     %s", qPrintable(describe(pickMeasured)));
        qInfo("  median error %.1f%%", 100 * medianError(pickPredicted, pickMeasured));
        // No lower than the current settings' by more than the noise. The
        // floor of 0.5 req/s (about 6 of the 200 requests over the ~13 s
        // run) covers the noise that two runs did not sample: a request
        // whose TTFT sits near the bound can land either side of it when
        // the machine's other work delays a step.
        constexpr double kNoiseFloorRps = 0.5;
        QVERIFY2(pickMeasured.goodput >= currentGoodput - noise - kNoiseFloorRps,
                 qPrintable(QStringLiteral("pick %1 req/s, current %2 +- %3")
                                .arg(pickMeasured.goodput)
                                .arg(currentGoodput)
                                .arg(noise)));

        // 8. The held-out trace under the pick: predicted (its config, with
        //    the goodput bounds) against measured.
        const QString pickFile = dir.filePath("pick.json");
        {
            QJsonObject config = recommended.value("config").toObject();
            config["goodput"] = QJsonObject{
                {"ttft_us", kTtftBoundMs * 1000}, {"tpot_us", kTpotBoundMs * 1000}, {"e2e_us", 0}};
            QFile f(pickFile);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(QJsonDocument(config).toJson());
        }
        const QJsonObject heldOutSimulated =
            runJson({"replay", heldOut, "--trace", "--simulate", "--calibration", cal, "--config", pickFile,
                     "--db", db, "--json"},
                    why);
        QVERIFY2(!heldOutSimulated.isEmpty(), qPrintable(why));
        const QJsonObject heldOutServer =
            heldOutSimulated.value("config").toObject().value("server").toObject();
        QCOMPARE(heldOutServer.value("kind").toString(), QStringLiteral("vllm"));
        QCOMPARE(heldOutServer.value("max_num_seqs").toInt(), pickSeqs);
        const QJsonObject heldOutRun = replayForReal(heldOut);
        QVERIFY2(checkMeasured(heldOutRun).isEmpty(), qPrintable(checkMeasured(heldOutRun)));
        const Figures heldOutPredicted =
            figures(heldOutSimulated.value("comparison").toObject().value("b").toObject());
        const Figures heldOutMeasured = figures(heldOutRun);
        const double heldOutError = medianError(heldOutPredicted, heldOutMeasured);
        qInfo("held-out trace predicted: %s", qPrintable(describe(heldOutPredicted)));
        qInfo("held-out trace measured:  %s", qPrintable(describe(heldOutMeasured)));
        qInfo("held-out median |error| over throughput, TTFT p50/p99, TPOT p50/p99: %.1f%% (target 15%%)",
              100 * heldOutError);
        // The target is 15%; asserted at 30% so that a busy 2-core
        // machine (the fake server is Python, its steps a few ms on the wall
        // clock) does not fail it on a slow step.
        QVERIFY2(heldOutError <= 0.30, qPrintable(QStringLiteral("%1%").arg(100 * heldOutError)));

        QVERIFY2(server->stop(), qPrintable(server->output()));
        qInfo("the whole loop took %.1f s", double(clock.elapsed()) / 1000);
    }
};

QTEST_GUILESS_MAIN(TestFakeLlmServer)
#include "test_fake_llm_server.moc"
