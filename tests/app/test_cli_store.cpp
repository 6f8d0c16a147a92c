// The trace-store subcommands as an operator runs them: import-trace (skip
// or reject malformed rows, with line numbers), traces, sessions, replay of
// a trace and of a session with the comparison, --json forms, and clear
// messages with non-zero exit codes for unknown ids, missing files, a
// database that is not ours and bad usage.
#include "engine/store/sqlite_db.h"
#include "tests/process_run.h"

#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

using Run = bp::test::ProcessRun;

struct Cli : bp::test::CliDb {
    Cli() : CliDb(QStringLiteral(BATCHPILOT_EXE)) {}
};

nlohmann::json json(const Run &r)
{
    auto j = nlohmann::json::parse(r.out.toStdString(), nullptr, false);
    return j;
}

const QByteArray kTrace = "arrival_s,input_tokens,output_tokens\n" // 1
                          "0.000,32,4\n"                           // 2
                          "0.010,oops,4\n"                         // 3
                          "0.012,48,2\n"                           // 4
                          "0.020,16,8\n"                           // 5
                          "0.250,64,1\n"                           // 6
                          "0.251,8,1\n";                           // 7

#define VERIFY_RUN(r, expected)                                                                              \
    QVERIFY2((r).code == (expected),                                                                         \
             qPrintable(QString("exit %1, stdout: %2, stderr: %3").arg((r).code).arg((r).out, (r).err)))

} // namespace

class TestCliStore : public QObject {
    Q_OBJECT
private slots:
    void importListReplayAndCompare()
    {
        Cli cli;
        const QString csv = cli.write("small.csv", kTrace);
        Run r = cli.run({"import-trace", csv});
        VERIFY_RUN(r, 0);
        QVERIFY(r.out.contains("imported trace 1 'small' (plain format): 5 requests"));
        QVERIFY(r.out.contains("1 malformed rows skipped"));
        QVERIFY2(r.err.contains("line 3:"), qPrintable(r.err));

        r = cli.run({"traces"});
        VERIFY_RUN(r, 0);
        QVERIFY(r.out.contains("small"));
        r = cli.run({"traces", "--json"});
        VERIFY_RUN(r, 0);
        auto traces = json(r);
        QCOMPARE(traces.size(), std::size_t(1));
        QCOMPARE(traces[0]["rows"].get<int>(), 5);
        QCOMPARE(traces[0]["skipped_rows"].get<int>(), 1);

        // Replay the trace on the virtual clock: a new session linked to it.
        r = cli.run({"replay", "1", "--trace", "--virtual"});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("replay session 1 (replay of trace 1, virtual clock): 5 requests"),
                 qPrintable(r.out));
        QVERIFY(r.out.contains("latency p99 (ms)"));

        // Replay that session under another config, as JSON.
        const QString config =
            cli.write("wide.json", R"({"max_batch_size": 4, "max_queue_delay_us": 50000})");
        r = cli.run({"replay", "1", "--virtual", "--config", config, "--json"});
        VERIFY_RUN(r, 0);
        auto j = json(r);
        QVERIFY2(!j.is_discarded(), qPrintable(r.out));
        QCOMPARE(j["session_id"].get<int>(), 2);
        QCOMPARE(j["config"]["max_batch_size"].get<int>(), 4);
        QCOMPARE(j["comparison"]["a"]["session_id"].get<int>(), 1);
        QCOMPARE(j["comparison"]["b"]["session_id"].get<int>(), 2);
        QCOMPARE(j["comparison"]["b"]["completed"].get<double>(), 5.0);
        QVERIFY(j["comparison"]["change"].contains("latency_p99_ms"));
        // 5 requests in 2 batches (4 arrive within 50 ms, then 2 more... capped at 4)
        QVERIFY(j["comparison"]["b"]["mean_batch_size"].get<double>() >
                j["comparison"]["a"]["mean_batch_size"].get<double>());

        // The table form prints both sessions side by side.
        r = cli.run({"replay", "1", "--virtual", "--config", config});
        VERIFY_RUN(r, 0);
        QVERIFY(r.out.contains("session 1") && r.out.contains("session 3") && r.out.contains("change"));

        // A real-clock replay, accelerated and limited.
        r = cli.run({"replay", "1", "--trace", "--speed", "20", "--limit", "3", "--length-scale", "0.5"});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("real clock): 3 requests"), qPrintable(r.out));

        r = cli.run({"sessions", "--json"});
        VERIFY_RUN(r, 0);
        auto sessions = json(r);
        QCOMPARE(sessions.size(), std::size_t(4));
        QCOMPARE(sessions[0]["requests"].get<int>(), 3); // newest first
        QCOMPARE(sessions[0]["source_trace_id"].get<int>(), 1);
        QCOMPARE(sessions[1]["source_session_id"].get<int>(), 1);
        QVERIFY(!sessions[3]["ended_at_us"].is_null());
        r = cli.run({"sessions"});
        VERIFY_RUN(r, 0);
        QVERIFY(r.out.contains("trace 1") && r.out.contains("session 1"));
    }

    // A simulated replay shows each latency figure with the range the
    // calibration's fit spread gives it, and how to narrow it.
    void simulationShowsTheFitSpread()
    {
        Cli cli;
        VERIFY_RUN(cli.run({"import-trace", cli.write("small.csv", kTrace)}), 0);
        Run r;
        nlohmann::json j;
        // With its fit's error: each latency figure with the range the fit's
        // spread gives it, and how to narrow it.
        VERIFY_RUN(
            cli.run({"calibrate", "--import",
                     cli.write("echo2.json", R"({"format": "batchpilot-calibration", "model": "builtin:echo",
            "device": "cpu", "threads": 1, "generative": true, "max_sequence_length": 8192,
            "max_new_tokens_limit": 8192, "cost_model": {"pass": [0.001, 0, 0, 0], "step": [0, 0, 0]},
            "batch_fit_error": {"observations": 9, "median_rel": 0.02, "rms_rel": 0.2, "max_rel": 0.5}})")}),
            0);
        r = cli.run({"replay", "1", "--trace", "--simulate", "--calibration", "1", "--json"});
        VERIFY_RUN(r, 0);
        j = json(r);
        QCOMPARE(j["interval"]["cost_spread"].get<double>(), 0.2);
        for (const char *f : {"p50_s", "p99_s", "mean_s"}) {
            const double lo = j["interval"]["low"][f], mid = j["interval"]["simulated"][f],
                         hi = j["interval"]["high"][f];
            QVERIFY2(lo <= mid && mid <= hi && lo < hi, f);
        }
        r = cli.run({"replay", "1", "--trace", "--simulate", "--calibration", "1"});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("with the fit's spread (every cost x0.80 to x1.20: its rms error): p50 ") &&
                     r.out.contains("calibrate from that session (batchpilot calibrate --model builtin:echo "
                                    "--threads 1 --session SESSION)"),
                 qPrintable(r.out));
    }

    // calibrate (here: --import of an exported calibration, and a fit to a
    // recorded session's batch rows), then replay --simulate with it: a
    // session marked as a simulation, its calibration named.
    void calibrateAndSimulate()
    {
        Cli cli;
        VERIFY_RUN(cli.run({"import-trace", cli.write("small.csv", kTrace)}), 0);
        const QString calibration =
            cli.write("echo.json", R"({"format": "batchpilot-calibration", "model": "builtin:echo",
            "device": "cpu", "threads": 1, "generative": true, "max_sequence_length": 8192,
            "max_new_tokens_limit": 8192, "cost_model": {"pass": [0.001, 0, 0, 0], "step": [0, 0, 0]}})");
        Run r = cli.run({"calibrate", "--import", calibration});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("imported as calibration 1"), qPrintable(r.out));
        r = cli.run({"calibrate", "--list"});
        VERIFY_RUN(r, 0);
        QVERIFY(r.out.contains("builtin:echo"));

        r = cli.run({"replay", "1", "--trace", "--simulate", "--calibration", "1", "--json"});
        VERIFY_RUN(r, 0);
        auto j = json(r);
        QVERIFY2(!j.is_discarded(), qPrintable(r.out));
        QCOMPARE(j["calibration"]["id"].get<int>(), 1);
        QCOMPARE(j["comparison"]["b"]["completed"].get<double>(), 5.0);
        QCOMPARE(j["comparison"]["b"]["kind"].get<std::string>(), std::string("simulation"));
        // every request took at least the 1 ms its batch was charged
        QVERIFY(j["comparison"]["b"]["latency_p50_ms"].get<double>() >= 1.0);
        QVERIFY(!j.contains("interval")); // an imported calibration without a fit error: no spread known
        // without --calibration: the newest for --model
        r = cli.run({"replay", "1", "--trace", "--simulate", "--model", "builtin:echo"});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("simulated clock") && r.out.contains("calibration 1"), qPrintable(r.out));
        r = cli.run({"replay", "1", "--trace", "--simulate", "--model", "builtin:tiny-encoder"});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("batchpilot calibrate --model builtin:tiny-encoder"), qPrintable(r.err));
        VERIFY_RUN(cli.run({"replay", "1", "--trace", "--simulate", "--virtual"}), 2);
        VERIFY_RUN(cli.run({"replay", "1", "--trace", "--noise", "none"}), 2); // needs --simulate
        r = cli.run({"replay", "1", "--trace", "--simulate", "--calibration", "1", "--noise", "loud"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("--noise must be none, mean or drawn"), qPrintable(r.err));

        // a fit to the simulated session's batch rows, exported as JSON
        r = cli.run({"calibrate", "--model", "builtin:echo", "--session", "1", "--no-profile", "--json"});
        VERIFY_RUN(r, 0);
        QVERIFY2(json(r)["source"].get<std::string>().rfind("session 1 (", 0) == 0, qPrintable(r.out));
        r = cli.run({"calibrate", "--export", "2"});
        VERIFY_RUN(r, 0);
        QCOMPARE(json(r)["id"].get<int>(), 2);
        QVERIFY(json(r)["cost_model"]["pass"][0].get<double>() > 0.0009);

        // A calibration with a scheduler lateness of 3 ms: every request
        // finds the engine idle, so each waits for that wake-up, under
        // every --noise (one measured value: its median, mean and draws).
        const QString late =
            cli.write("late.json", R"({"format": "batchpilot-calibration", "model": "builtin:echo",
            "device": "cpu", "threads": 1, "generative": true, "max_sequence_length": 8192,
            "max_new_tokens_limit": 8192, "cost_model": {"pass": [0.001, 0, 0, 0], "step": [0, 0, 0],
            "dispatch_lateness_s": [0.003]}})");
        r = cli.run({"calibrate", "--import", late});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("imported as calibration 3"), qPrintable(r.out));
        for (const char *noise : {"none", "mean", "drawn"}) {
            r = cli.run(
                {"replay", "1", "--trace", "--simulate", "--calibration", "3", "--noise", noise, "--json"});
            VERIFY_RUN(r, 0);
            QVERIFY2(json(r)["comparison"]["b"]["latency_p50_ms"].get<double>() >= 3.99, qPrintable(r.out));
        }
        r = cli.run({"calibrate", "--export", "3"});
        VERIFY_RUN(r, 0);
        QCOMPARE(json(r)["cost_model"]["dispatch_lateness_s"][0].get<double>(), 0.003);
    }

    void rejectBadRows()
    {
        Cli cli;
        const QString csv = cli.write("small.csv", kTrace);
        Run r = cli.run({"import-trace", csv, "--reject-bad-rows"});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("line 3"), qPrintable(r.err));
        r = cli.run({"traces"});
        VERIFY_RUN(r, 0);
        QVERIFY(r.out.contains("no traces"));
    }

    void clearErrors()
    {
        Cli cli;
        // No database yet: listing does not create one.
        Run r = cli.run({"sessions"});
        VERIFY_RUN(r, 1);
        QVERIFY(r.err.contains("no trace database"));
        QVERIFY(!QFile::exists(cli.db()));

        r = cli.run({"import-trace", cli.path("missing.csv")});
        VERIFY_RUN(r, 1);
        QVERIFY(r.err.contains("cannot open trace file"));

        QVERIFY(cli.run({"import-trace", cli.write("t.csv", kTrace)}).code == 0);
        r = cli.run({"replay", "42"});
        VERIFY_RUN(r, 1);
        QVERIFY(r.err.contains("no session 42"));
        r = cli.run({"replay", "42", "--trace"});
        VERIFY_RUN(r, 1);
        QVERIFY(r.err.contains("no trace 42"));
        r = cli.run({"replay", "1", "--trace", "--config", cli.path("nope.json")});
        VERIFY_RUN(r, 1);

        // Not our database: another application's SQLite file, a text file.
        {
            auto foreign = bp::sqlite::Connection::open(cli.path("other.sqlite").toStdString(),
                                                        bp::sqlite::Connection::Mode::ReadWriteCreate);
            QVERIFY(foreign);
            QVERIFY(foreign->exec("CREATE TABLE notes (body TEXT)", "seed"));
        }
        r = cli.run({"traces"}, cli.path("other.sqlite"));
        VERIFY_RUN(r, 1);
        QVERIFY(r.err.contains("not a BatchPilot trace database"));
        r = cli.run({"import-trace", cli.path("t.csv")}, cli.write("text.sqlite", QByteArray(4096, 'x')));
        VERIFY_RUN(r, 1);
        QVERIFY(r.err.contains("not a BatchPilot trace database"));

        // Bad usage.
        VERIFY_RUN(cli.run({"replay"}), 2);
        VERIFY_RUN(cli.run({"replay", "abc"}), 2);
        VERIFY_RUN(cli.run({"replay", "1", "--speed", "0"}), 2);
        VERIFY_RUN(cli.run({"replay", "1", "--frobnicate"}), 2);
        VERIFY_RUN(cli.run({"import-trace"}), 2);
        VERIFY_RUN(cli.run({"traces", "extra"}), 2);
    }
};

QTEST_GUILESS_MAIN(TestCliStore)
#include "test_cli_store.moc"
