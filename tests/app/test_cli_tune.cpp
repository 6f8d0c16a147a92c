// batchpilot tune as an operator runs it: a search on an imported trace with
// an imported calibration of builtin:echo, the Pareto front, the
// recommendation written as a config file, the real-clock verification
// replay recorded as a session, the JSON form, and clear errors (bad --slo,
// bad --objective, both sources, an unknown trace, no calibration).
#include "tests/process_run.h"

#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

using Run = bp::test::ProcessRun;

struct Cli : bp::test::CliDb {
    Cli() : CliDb(QStringLiteral(BATCHPILOT_EXE)) {}
};

// 300 arrivals 4 ms apart (250 req/s, 1.2 s), inputs 8..71 tokens.
QByteArray trace()
{
    QByteArray csv = "arrival_s,input_tokens,output_tokens\n";
    for (int i = 0; i < 300; ++i)
        csv += QByteArray::number(i * 0.004, 'f', 3) + "," + QByteArray::number(8 + (i * 37) % 64) + ",2\n";
    return csv;
}

// builtin:echo costs microseconds: 50 us a batch and 2 us a request.
const QByteArray kCalibration = R"({"format": "batchpilot-calibration", "model": "builtin:echo",
    "device": "cpu", "threads": 1, "generative": true, "max_sequence_length": 8192,
    "max_new_tokens_limit": 8192, "cost_model": {"pass": [0.00005, 0.000002, 0, 0], "step": [0, 0, 0]}})";

#define VERIFY_RUN(r, expected)                                                                              \
    QVERIFY2((r).code == (expected),                                                                         \
             qPrintable(QString("exit %1, stdout: %2, stderr: %3").arg((r).code).arg((r).out, (r).err)))

} // namespace

class TestCliTune : public QObject {
    Q_OBJECT

private slots:
    void tuneAndVerify()
    {
        Cli cli;
        VERIFY_RUN(cli.run({"import-trace", cli.write("t.csv", trace())}), 0);
        VERIFY_RUN(cli.run({"calibrate", "--import", cli.write("echo.json", kCalibration)}), 0);

        Run r = cli.run({"tune", "--trace", "1", "--slo", "p99<=50ms", "--objective", "throughput",
                         "--budget", "40", "--jobs", "2", "--calibration", "1", "--json"});
        VERIFY_RUN(r, 0);
        const auto j = nlohmann::json::parse(r.out.toStdString(), nullptr, false);
        QVERIFY2(!j.is_discarded(), qPrintable(r.out));
        QCOMPARE(j["requests"].get<int>(), 300);
        QVERIFY(j["evaluated"].get<int>() <= 40);
        QCOMPARE(j["candidates"].size(), j["evaluated"].get<std::size_t>());
        QVERIFY(!j["pareto"].empty());
        QVERIFY(j["any_met"].get<bool>());
        const auto &rec = j["recommended"];
        QVERIFY(rec["predicted"]["slo_met"].get<bool>());
        QVERIFY(rec["capacity_speed"].get<double>() >= 1);
        QVERIFY(rec["config"].contains("policy"));
        // The check ran for real and was recorded as a session.
        const auto &v = j["verification"];
        const int session = v["session_id"].get<int>();
        QVERIFY(session > 0);
        // The default window, the busiest 3 minutes, holds the whole 1.2 s
        // trace; its expected duration was said before it started.
        QCOMPARE(v["window"]["spec"].get<std::string>(), std::string("busiest:3m"));
        QCOMPARE(v["window"]["requests"].get<int>(), 300);
        QCOMPARE(v["partial"].get<bool>(), false);
        QVERIFY2(r.err.contains("replay of the busiest 3 min of arrivals: 300 of 300 requests") &&
                     r.err.contains("expected about"),
                 qPrintable(r.err));
        QCOMPARE(v["measured"]["requests"].get<int>(), 300);
        QCOMPARE(v["measured"]["completed"].get<int>(), 300);
        QVERIFY(v["measured"]["p99_ms"].get<double>() > 0);
        r = cli.run({"sessions"});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("tune: verifies"), qPrintable(r.out));
        // Stored: the verification session's report has a Recommendation section.
        QVERIFY(j["tuning_id"].get<int>() > 0);
        const QString report = cli.path("r.json");
        VERIFY_RUN(cli.run({"report", QString::number(session), "-o", report}), 0);
        QFile rf(report);
        QVERIFY(rf.open(QIODevice::ReadOnly));
        const auto rj = nlohmann::json::parse(rf.readAll().toStdString(), nullptr, false);
        QVERIFY2(rj["recommendation"].is_array() && rj["recommendation"].size() == 1,
                 qPrintable(rf.fileName()));
        const auto &t = rj["recommendation"][0];
        QCOMPARE(t["role"].get<std::string>(), std::string("verification"));
        QCOMPARE(t["tuning_id"].get<int>(), j["tuning_id"].get<int>());
        QCOMPARE(t["slo"].get<std::string>(), std::string("p99 <= 50ms"));
        QCOMPARE(t["result"]["recommended"]["label"], rec["label"]);
        QCOMPARE(t["result"]["verification"]["measured"]["completed"].get<int>(), 300);
        const QString html = cli.path("r.html");
        VERIFY_RUN(cli.run({"report", QString::number(session), "-o", html}), 0);
        QFile hf(html);
        QVERIFY(hf.open(QIODevice::ReadOnly));
        const QString page = QString::fromUtf8(hf.readAll());
        QVERIFY(page.contains("<h2>Recommendation</h2>"));
        QVERIFY(page.contains(QString::fromStdString(rec["label"].get<std::string>()).toHtmlEscaped()));
        QVERIFY(page.contains("<th>measured</th>"));

        // A window: the first 0.4 s of arrivals (100 requests), its own session.
        r = cli.run({"tune", "--trace", "1", "--slo", "p99<=50ms", "--budget", "20", "--calibration", "1",
                     "--verify-window", "first:400ms"});
        VERIFY_RUN(r, 0);
        for (const char *text :
             {"Verification: real-clock replay of the first 400 ms of arrivals (requests 1-100",
              "throughput/s", "p99 ms"})
            QVERIFY2(r.out.contains(text), qPrintable(text + QStringLiteral(" missing from:\n") + r.out));
        QVERIFY2(r.err.contains("100 of 300 requests"), qPrintable(r.err));

        // Text form, without the check, the recommendation written as a config.
        const QString output = cli.path("rec.json");
        r = cli.run({"tune", "--trace", "1", "--slo", "p99<=50ms", "--budget", "30", "--model",
                     "builtin:echo", "--no-verify", "--output", output});
        VERIFY_RUN(r, 0);
        for (const char *text : {"Pareto front", "Recommended: ", "predicted: ",
                                 "capacity: meets the SLO up to", "simulated 30 configs"})
            QVERIFY2(r.out.contains(text), qPrintable(text + QStringLiteral(" missing from:\n") + r.out));
        QVERIFY(!r.out.contains("Verification"));
        QFile f(output);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto config = nlohmann::json::parse(f.readAll().toStdString(), nullptr, false);
        QVERIFY(config.contains("policy") && config.contains("max_batch_size"));
        // The written config is one the replay accepts.
        VERIFY_RUN(
            cli.run({"replay", "1", "--trace", "--simulate", "--calibration", "1", "--config", output}), 0);
    }

    // tune's prediction carries the fit's spread, as replay --simulate's.
    void predictionCarriesTheFitSpread()
    {
        Cli cli;
        VERIFY_RUN(cli.run({"import-trace", cli.write("t.csv", trace())}), 0);
        QByteArray calibration = kCalibration;
        calibration.replace(
            R"("cost_model")",
            R"("batch_fit_error": {"observations": 9, "median_rel": 0.02, "rms_rel": 0.3, "max_rel": 0.6}, "cost_model")");
        VERIFY_RUN(cli.run({"calibrate", "--import", cli.write("echo.json", calibration)}), 0);
        Run r = cli.run({"tune", "--trace", "1", "--slo", "p99<=50ms", "--budget", "20", "--calibration", "1",
                         "--no-verify"});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("with the fit's spread (every cost x0.70 to x1.30: its rms error): p50 ") &&
                     r.out.contains("--session SESSION)"),
                 qPrintable(r.out));
        r = cli.run({"tune", "--trace", "1", "--slo", "p99<=50ms", "--budget", "20", "--calibration", "1",
                     "--no-verify", "--json"});
        VERIFY_RUN(r, 0);
        const auto j = nlohmann::json::parse(r.out.toStdString(), nullptr, false);
        QCOMPARE(j["recommended"]["interval"]["cost_spread"].get<double>(), 0.3);
        QVERIFY(j["recommended"]["interval"]["low"]["p99_s"].get<double>() <=
                j["recommended"]["interval"]["high"]["p99_s"].get<double>());
    }

    void clearErrors()
    {
        Cli cli;
        VERIFY_RUN(cli.run({"import-trace", cli.write("t.csv", trace())}), 0);
        Run r = cli.run({"tune", "--trace", "1", "--slo", "p95<=1s"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("unknown metric 'p95'") && r.err.contains("expected e.g."),
                 qPrintable(r.err));
        r = cli.run({"tune", "--trace", "1", "--slo", "p99<=1s", "--objective", "latency"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("--objective must be goodput or throughput, not 'latency'"),
                 qPrintable(r.err));
        r = cli.run({"tune", "--trace", "1", "--session", "1", "--slo", "p99<=1s"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("give one of --trace ID or --session ID"), qPrintable(r.err));
        r = cli.run({"tune", "--trace", "1"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("--slo is required"), qPrintable(r.err));
        r = cli.run({"tune", "--trace", "1", "--slo", "p99<=1s", "--verify-window", "last:3m"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("--verify-window 'last:3m': unknown window 'last'") &&
                     r.err.contains("busiest:3m"),
                 qPrintable(r.err));
        r = cli.run({"tune", "--trace", "42", "--slo", "p99<=1s"});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("no trace 42"), qPrintable(r.err));
        r = cli.run({"tune", "--trace", "1", "--slo", "p99<=1s", "--model", "builtin:tiny-encoder"});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("batchpilot calibrate --model builtin:tiny-encoder"), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestCliTune)
#include "test_cli_tune.moc"
