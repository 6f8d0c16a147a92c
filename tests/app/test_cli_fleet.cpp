// batchpilot autoscale --trace and --decide as an operator runs them: an
// imported step-load trace (quiet, a burst at 30x, quiet again) replayed
// under a reactive policy on a simulated fleet of builtin:echo replicas
// (an imported calibration: 20 ms a batch + 4 ms a request), then checked
// for what autoscaling must do: replicas that serve a cold start after
// they were asked for, drains after the burst, misses attributed to the
// cold start (none when the cold start is 0), the static plan and the fixed
// fleet beside it, the run stored, the cold start's default from the
// model's size, a search for the cheapest reactive policy, the plan's
// schedule as a policy, and clear errors. --decide answers observations on
// stdin line by line, and a bad line with an error that does not stop it.
#include "tests/process_run.h"

#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

using Run = bp::test::ProcessRun;
using nlohmann::json;

struct Cli : bp::test::CliDb {
    Cli() : CliDb(QStringLiteral(BATCHPILOT_EXE), 240000) {}
};

// 8 minutes: 10 req/s for 60 s, 300 req/s for 120 s, 10 req/s for 300 s;
// inputs 8..71 tokens.
QByteArray stepTrace()
{
    QByteArray csv = "arrival_s,input_tokens,output_tokens\n";
    int i = 0;
    const auto add = [&](int from, int to, int rate) {
        for (int k = 0; k < (to - from) * rate; ++k, ++i)
            csv += QByteArray::number(from + double(k) / rate, 'f', 4) + "," +
                   QByteArray::number(8 + (i * 37) % 64) + ",1\n";
    };
    add(0, 60, 10);
    add(60, 180, 300);
    add(180, 480, 10);
    return csv;
}

// builtin:echo, request level: a pass costs 20 ms + 4 ms a request (a full
// batch of 16: 84 ms, ~190 req/s; one request: 24 ms).
const QByteArray kCalibration = R"({"format": "batchpilot-calibration", "model": "builtin:echo",
    "device": "cpu", "threads": 1, "generative": false, "max_sequence_length": 8192,
    "cost_model": {"pass": [0.02, 0.004, 0, 0], "step": [0, 0, 0]}})";

#define VERIFY_RUN(r, expected)                                                                              \
    QVERIFY2((r).code == (expected),                                                                         \
             qPrintable(QString("exit %1, stdout: %2, stderr: %3").arg((r).code).arg((r).out, (r).err)))

json parsed(const Run &r)
{
    json j = json::parse(r.out.toStdString(), nullptr, false);
    if (j.is_discarded())
        qFatal("not JSON: %s", qPrintable(r.out));
    return j;
}

// The reactive policy the tests replay: queue depth 4 a replica, 1..6
// replicas, a decision every 5 s, scale-down after 60 s of lower asks.
QStringList policyArgs()
{
    return {"--policy", "reactive", "--metric", "queue", "--target",      "4",  "--min", "1",
            "--max",    "6",        "--period", "5s",    "--down-window", "60s"};
}

QStringList traceArgs(const QString &coldStart)
{
    return QStringList{"autoscale", "--trace",  "1",   "--slo",        "p99<=300ms", "--calibration",
                       "1",         "--window", "30s", "--cold-start", coldStart,    "--noise",
                       "none",      "--jobs",   "1",   "--json"} +
           policyArgs();
}

} // namespace

class TestCliFleet : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        VERIFY_RUN(m_cli.run({"import-trace", m_cli.write("step.csv", stepTrace())}), 0);
        VERIFY_RUN(m_cli.run({"calibrate", "--import", m_cli.write("echo.json", kCalibration)}), 0);
    }

    void replaysThePolicyWithColdStarts()
    {
        Run r = m_cli.run(traceArgs("20s"));
        VERIFY_RUN(r, 0);
        const json j = parsed(r);
        QCOMPARE(j["cold_start_s"].get<double>(), 20.0);
        QCOMPARE(j["cold_start_from"].get<std::string>(), std::string("--cold-start"));
        QCOMPARE(j["knobs"]["policy"].get<std::string>(), std::string("reactive"));
        const json &run = j["run"];
        QCOMPARE(run["requests"].get<int>(), 600 + 36000 + 3000);
        QVERIFY(run["steps"].get<std::size_t>() > 0);
        QVERIFY(run["coalesced_steps"].get<std::size_t>() <= run["steps"].get<std::size_t>());
        QVERIFY(run["peak_replicas"].get<int>() >= 2);
        QVERIFY(run["scale_ups"].get<int>() >= 1);
        QVERIFY2(run["scale_downs"].get<int>() >= 1, "the fleet drains after the burst");

        // Each replica asked for serves 20 s later. The timeline has a row
        // for each decision that saw or asked for something new: the fleet
        // as the decision saw it (ready, starting, draining), and what it wanted.
        const json &timeline = run["timeline"];
        QVERIFY(timeline.size() >= 3);
        double askedAt = -1, servedAt = -1, last = 0;
        const int initial = timeline[0][1].get<int>();
        for (const json &row : timeline) {
            const double at = row[0].get<double>();
            QVERIFY(at > last && std::abs(at / 5 - std::round(at / 5)) < 1e-9); // a decision every 5 s
            last = at;
            if (askedAt < 0 && row[4].get<int>() > row[1].get<int>() + row[2].get<int>())
                askedAt = at;
            if (servedAt < 0 && row[1].get<int>() > initial)
                servedAt = at;
        }
        QVERIFY2(askedAt >= 60, "nothing is asked for before the burst");
        QVERIFY2(servedAt >= askedAt + 20 && servedAt <= askedAt + 25,
                 qPrintable(QString("asked at %1 s, serving at %2 s").arg(askedAt).arg(servedAt)));

        // The burst's first windows miss while replicas start; the misses
        // then are the cold start's.
        const int misses = run["misses"].get<int>(), cold = run["cold_start_misses"].get<int>();
        QVERIFY2(cold > 0 && cold <= misses, qPrintable(QString("%1 cold of %2").arg(cold).arg(misses)));
        int windowCold = 0;
        for (const json &w : run["windows"]) {
            windowCold += w["cold_start_misses"].get<int>();
            if (w["cold_start_misses"].get<int>() > 0)
                QVERIFY(w["begin_s"].get<double>() >= 60 && w["begin_s"].get<double>() < 240);
        }
        QCOMPARE(windowCold, cold);
        QCOMPARE(run["windows"].size(), std::size_t(16)); // 480 s in 30 s windows

        // The static plan (made here, hourly: one window) and the fixed fleet of its peak.
        QVERIFY(j["plan"]["id"].is_null());
        QCOMPARE(j["plan"]["replicas"].size(), std::size_t(1));
        const int peak = j["plan"]["peak_replicas"].get<int>();
        QVERIFY(peak >= 2);
        QCOMPARE(j["fixed"]["replicas"].get<int>(), peak);
        QVERIFY(std::abs(j["fixed"]["replica_hours"].get<double>() -
                         peak * run["span_s"].get<double>() / 3600) < 1e-9);
        QVERIFY2(run["replica_hours"].get<double>() <
                     run["peak_replicas"].get<int>() * run["span_s"].get<double>() / 3600,
                 "the fleet is at its peak only for a while");

        // Stored: the id is in the document.
        QVERIFY(j["autoscale_run_id"].get<int>() >= 1);
    }

    void noColdStartNoColdMisses()
    {
        Run r = m_cli.run(traceArgs("0") << "--no-store"
                                         << "--no-compare");
        VERIFY_RUN(r, 0);
        const json j = parsed(r);
        QCOMPARE(j["run"]["cold_start_misses"].get<int>(), 0);
        QVERIFY(!j.contains("autoscale_run_id"));
        QVERIFY(!j.contains("plan"));
        QVERIFY(!j.contains("fixed"));
    }

    void coldStartFromTheModelsSize()
    {
        // echo's calibration knows no size: the warm-up alone, said so.
        Run r = m_cli.run(QStringList{"autoscale", "--trace", "1", "--slo", "p99<=300ms", "--calibration",
                                      "1", "--warmup", "12s", "--no-store", "--no-compare", "--json"} +
                          policyArgs());
        VERIFY_RUN(r, 0);
        json j = parsed(r);
        QCOMPARE(j["cold_start_s"].get<double>(), 12.0);
        QVERIFY2(j["cold_start_from"].get<std::string>().find("unknown") != std::string::npos,
                 j["cold_start_from"].get<std::string>().c_str());
        // 2 GB at 500 MB/s + 12 s.
        r = m_cli.run(QStringList{"autoscale", "--trace", "1", "--slo", "p99<=300ms", "--calibration", "1",
                                  "--warmup", "12s", "--model-bytes", "2e9", "--load-bandwidth", "5e8",
                                  "--no-store", "--no-compare", "--json"} +
                      policyArgs());
        VERIFY_RUN(r, 0);
        j = parsed(r);
        QCOMPARE(j["cold_start_s"].get<double>(), 16.0);
    }

    void scheduleFromThePlan()
    {
        Run r =
            m_cli.run({"autoscale", "--trace", "1", "--slo", "p99<=300ms", "--calibration", "1", "--window",
                       "30s", "--policy", "scheduled", "--cold-start", "20s", "--no-store", "--json"});
        VERIFY_RUN(r, 0);
        const json j = parsed(r);
        QCOMPARE(j["knobs"]["policy"].get<std::string>(), std::string("scheduled"));
        QCOMPARE(j["knobs"]["schedule"], j["plan"]["replicas"]);
        QCOMPARE(j["knobs"]["lead_s"].get<double>(), 20.0);
        QCOMPARE(j["run"]["peak_replicas"].get<int>(), j["plan"]["peak_replicas"].get<int>());
    }

    void searchFindsACheaperPolicyThatMeets()
    {
        Run r = m_cli.run(traceArgs("20s") << "--search"
                                           << "--required-share"
                                           << "0.8"
                                           << "--no-store");
        VERIFY_RUN(r, 0);
        const json j = parsed(r);
        const json &search = j["search"];
        QVERIFY(search["runs"].get<int>() >= 2);
        QCOMPARE(search["tried"].size(), search["runs"].get<std::size_t>());
        QVERIFY2(search["met"].get<bool>(), r.err.toUtf8().constData());
        QVERIFY(j["run"]["windows_met_share"].get<double>() >= 0.8);
        // The answer is the cheapest of the tries that met.
        const double best = j["run"]["replica_hours"].get<double>();
        for (const json &t : search["tried"])
            if (!t["stopped"].get<bool>() && t["windows_met_share"].get<double>() >= 0.8)
                QVERIFY2(t["replica_hours"].get<double>() >= best - 1e-9,
                         t["policy"].get<std::string>().c_str());
        QVERIFY(r.out.contains("\"calibration\""));
    }

    void textSummary()
    {
        Run r = m_cli.run(QStringList{"autoscale", "--trace", "1", "--slo", "p99<=300ms", "--calibration",
                                      "1", "--window", "30s", "--cold-start", "20s", "--replica-cost", "2.5",
                                      "--no-store"} +
                          policyArgs());
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("during a cold start"), qPrintable(r.out));
        QVERIFY(r.out.contains("against the static plan"));
        QVERIFY(r.out.contains("cost "));
        QVERIFY2(r.err.contains("cold start 20.0 s (--cold-start)"), qPrintable(r.err));
    }

    void errors()
    {
        Run r = m_cli.run({"autoscale", "--trace", "1"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("--slo"), qPrintable(r.err));
        r = m_cli.run({"autoscale", "--trace", "1", "--slo", "p99<=1s", "--window", "soon"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("--window"), qPrintable(r.err));
        r = m_cli.run({"autoscale", "--trace", "9", "--slo", "p99<=1s", "--calibration", "1"});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("9"), qPrintable(r.err));
        r = m_cli.run({"autoscale", "--trace", "1", "--watch", "http://127.0.0.1:1", "--slo", "p99<=1s"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("modes"), qPrintable(r.err));
        r = m_cli.run(
            {"autoscale", "--trace", "1", "--slo", "p99<=1s", "--calibration", "1", "--plan", "77"});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("77"), qPrintable(r.err));
        r = m_cli.run({"autoscale", "--trace", "1", "--slo", "p99<=1s", "--calibration", "1", "--policy",
                       "scheduled", "--no-compare"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("--no-compare"), qPrintable(r.err));
    }

    void decideAnswersEachLine()
    {
        const QByteArray input = "{\"at_s\": 15, \"ready\": 1, \"waiting\": 20}\n"
                                 "not json\n"
                                 "{\"at_s\": 30, \"ready\": 1, \"kv_usage\": 7}\n"
                                 "\n"
                                 "{\"at_s\": 45, \"ready\": 5, \"starting\": 0, \"waiting\": 0}\n";
        Run r = m_cli.run(QStringList{"autoscale", "--decide"} + policyArgs(), {}, input);
        VERIFY_RUN(r, 1); // a line was refused
        const QStringList lines = r.out.split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 4);
        const json first = json::parse(lines[0].toStdString());
        QCOMPARE(first["replicas"].get<int>(), 5); // 20 waiting / 4 a replica
        QVERIFY(!first["why"].get<std::string>().empty());
        QVERIFY(json::parse(lines[1].toStdString())["error"].get<std::string>().find("line 2") !=
                std::string::npos);
        QVERIFY(json::parse(lines[2].toStdString())["error"].get<std::string>().find("kv_usage") !=
                std::string::npos);
        // Idle now, but HPA's scale-down window keeps the recent ask.
        QCOMPARE(json::parse(lines[3].toStdString())["replicas"].get<int>(), 5);
    }

private:
    Cli m_cli;
};

QTEST_GUILESS_MAIN(TestCliFleet)
#include "test_cli_fleet.moc"
