// import-trace in the field's formats, export-trace and export-config, run
// as the real `batchpilot` binary: --format detection and override, BurstGPT
// --skip-failed, line-numbered bad rows, a Mooncake export of a trace and of a
// replayed session read back by import-trace, and export-config from a config
// file and from a session, with clear errors and exit codes for bad usage;
// import-config reading export-config's output back.
#include "tests/process_run.h"

#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

using Run = bp::test::ProcessRun;

QString fixture(const char *name)
{
    return QStringLiteral(TRACE_FIXTURES "/") + name;
}

struct Cli : bp::test::CliDb {
    Cli() : CliDb(QStringLiteral(BATCHPILOT_EXE)) {}

    static QString read(const QString &file)
    {
        QFile f(file);
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    }
};

nlohmann::json json(const Run &r)
{
    return nlohmann::json::parse(r.out.toStdString(), nullptr, false);
}

#define VERIFY_RUN(r, expected)                                                                              \
    QVERIFY2((r).code == (expected),                                                                         \
             qPrintable(QString("exit %1, stdout: %2, stderr: %3").arg((r).code).arg((r).out, (r).err)))

} // namespace

class TestCliInterop : public QObject {
    Q_OBJECT
private slots:
    void importFormats()
    {
        Cli cli;
        Run r = cli.run({"import-trace", fixture("burstgpt.csv")});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("(burstgpt format): 5 requests"), qPrintable(r.out));
        QVERIFY(r.out.contains("2 failed requests (0 response tokens) kept as prefill-only arrivals"));
        QVERIFY2(r.err.contains("line 5: bad input token count '-3'"), qPrintable(r.err));
        QVERIFY(r.err.contains("line 6: expected 6 comma-separated fields"));

        r = cli.run({"import-trace", fixture("burstgpt.csv"), "--skip-failed", "--json"});
        VERIFY_RUN(r, 0);
        auto j = json(r);
        QCOMPARE(j["rows"].get<int>(), 3);
        QCOMPARE(j["failed_rows"].get<int>(), 2);
        QCOMPARE(j["errors"][0]["line"].get<int>(), 5);

        r = cli.run({"import-trace", fixture("mooncake.jsonl")});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("(mooncake format): 5 requests"), qPrintable(r.out));
        QVERIFY2(r.out.contains("prefix blocks: 13 of 512 tokens, 6 reused from earlier requests (46.2%"),
                 qPrintable(r.out));

        r = cli.run({"import-trace", fixture("genai_perf.jsonl"), "--json"});
        VERIFY_RUN(r, 0);
        j = json(r);
        QCOMPARE(j["format"].get<std::string>(), std::string("genai-perf"));
        QCOMPARE(j["rows"].get<int>(), 4);

        r = cli.run({"import-trace", fixture("azure_2024.csv"), "--json"});
        VERIFY_RUN(r, 0);
        QCOMPARE(json(r)["format"].get<std::string>(), std::string("azure"));

        // The override: a Mooncake file read as genai-perf keeps its line-5 row.
        r = cli.run({"import-trace", fixture("mooncake.jsonl"), "--format", "genai-perf", "--json"});
        VERIFY_RUN(r, 0);
        QCOMPARE(json(r)["rows"].get<int>(), 6);
        r = cli.run({"import-trace", fixture("burstgpt.csv"), "--format", "azure"});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("expected the azure header"), qPrintable(r.err));
        r = cli.run({"import-trace", fixture("burstgpt.csv"), "--format", "parquet"});
        VERIFY_RUN(r, 2);
        QVERIFY(r.err.contains("unknown format 'parquet'"));

        r = cli.run({"traces"});
        VERIFY_RUN(r, 0);
        QVERIFY(r.out.contains("burstgpt") && r.out.contains("mooncake") && r.out.contains("genai-perf"));
    }

    void exportTraceRoundTrip()
    {
        Cli cli;
        VERIFY_RUN(cli.run({"import-trace", fixture("mooncake.jsonl")}), 0);
        const QString out = cli.path("trace1.jsonl");
        Run r = cli.run({"export-trace", "1", "--trace", "-o", out});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.err.contains("exported 5 requests of trace 1") && r.err.contains("the trace's own"),
                 qPrintable(r.err));
        const QString text = Cli::read(out);
        QVERIFY2(text.startsWith(
                     R"({"timestamp": 0, "input_length": 1300, "output_length": 50, "hash_ids": [0, 1, 2]})"),
                 qPrintable(text));
        r = cli.run({"import-trace", out, "--reject-bad-rows", "--json"});
        VERIFY_RUN(r, 0);
        auto j = json(r);
        QCOMPARE(j["format"].get<std::string>(), std::string("mooncake"));
        QCOMPARE(j["rows"].get<int>(), 5);
        QCOMPARE(j["reused_prefix_blocks"].get<int>(), 6);
        // Exported again, the second import is byte for byte the first export.
        r = cli.run({"export-trace", "2", "--trace"});
        VERIFY_RUN(r, 0);
        QCOMPARE(r.out, text);

        // A session: replay the trace on the virtual clock, export the session.
        r = cli.run({"replay", "1", "--trace", "--virtual", "--model", "builtin:echo"});
        VERIFY_RUN(r, 0);
        r = cli.run({"export-trace", "1"});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.err.contains("exported 5 requests of session 1") &&
                     r.err.contains("one fresh id per 512-token block"),
                 qPrintable(r.err));
        const QString session = cli.write("session1.jsonl", r.out.toUtf8());
        r = cli.run({"import-trace", session, "--reject-bad-rows", "--json"});
        VERIFY_RUN(r, 0);
        j = json(r);
        QCOMPARE(j["rows"].get<int>(), 5);
        QCOMPARE(j["reused_prefix_blocks"].get<int>(), 0);
        // the replay ran the trace's arrivals: the same span (ms precision)
        QCOMPARE(j["duration_s"].get<double>(), 6.0);

        r = cli.run({"export-trace", "99", "--trace"});
        VERIFY_RUN(r, 1);
        QVERIFY(r.err.contains("no trace 99"));
        r = cli.run({"export-trace", "1", "--format", "csv"});
        VERIFY_RUN(r, 2);
    }

    void exportConfig()
    {
        Cli cli;
        const QString config =
            cli.write("c.json", R"({"max_batch_size": 24, "max_queue_delay_us": 3000, "instances": 2})");
        Run r = cli.run({"export-config", "--format", "triton", "--config", config});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("max_batch_size: 24") &&
                     r.out.contains("max_queue_delay_microseconds: 3000") && r.out.contains("count: 2"),
                 qPrintable(r.out));
        QVERIFY(r.out.contains("# From " + config));

        const QString out = cli.path("model-config.yaml");
        r = cli.run({"export-config", "--format", "torchserve", "--config", config, "-o", out});
        VERIFY_RUN(r, 0);
        QVERIFY(Cli::read(out).contains("maxBatchDelay: 3"));
        QVERIFY2(r.err.contains("knobs mapped"), qPrintable(r.err));

        // From a session: the config it ended with.
        VERIFY_RUN(cli.run({"import-trace", fixture("burstgpt.csv")}), 0);
        VERIFY_RUN(
            cli.run({"replay", "1", "--trace", "--virtual", "--model", "builtin:echo", "--config", config}),
            0);
        r = cli.run({"export-config", "--format", "ray-serve", "--session", "1"});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("@serve.batch(max_batch_size=24, batch_wait_timeout_s=0.003)"),
                 qPrintable(r.out));
        QVERIFY(r.out.contains("# From session 1, config version"));

        r = cli.run({"export-config", "--format", "vllm"});
        VERIFY_RUN(r, 2);
        QVERIFY(r.err.contains("give exactly one of --session ID and --config FILE"));
        r = cli.run({"export-config", "--format", "kserve", "--config", config});
        VERIFY_RUN(r, 2);
        QVERIFY(r.err.contains("unknown format 'kserve'"));
        r = cli.run({"export-config", "--format", "tgi", "--session", "42"});
        VERIFY_RUN(r, 1);
        const QString bad = cli.write("bad.json", R"({"max_batch_size": 0})");
        r = cli.run({"export-config", "--format", "tgi", "--config", bad});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("max_batch_size"), qPrintable(r.err));
    }

    // import-config: export-config's output read back as a config that
    // export-config writes the same again; detection, --json, bad input.
    void importConfig()
    {
        Cli cli;
        const QString config = cli.write(
            "c.json",
            R"({"policy": "continuous", "continuous": {"max_num_seqs": 40, "max_num_batched_tokens": 768,
                          "chunked_prefill": false, "kv_cache_tokens": 20000}, "queue_capacity": 300})");
        const QString flags = cli.path("tgi.sh");
        VERIFY_RUN(cli.run({"export-config", "--format", "tgi", "--config", config, "-o", flags}), 0);
        Run r = cli.run({"import-config", flags});
        VERIFY_RUN(r, 0);
        auto j = json(r);
        QCOMPARE(j["policy"].get<std::string>(), std::string("continuous"));
        QCOMPARE(j["continuous"]["max_num_seqs"].get<int>(), 40);
        QCOMPARE(j["continuous"]["kv_cache_tokens"].get<int>(), 20000);
        QCOMPARE(j["queue_capacity"].get<int>(), 300);
        QVERIFY2(r.err.contains("read tgi settings from") && r.err.contains("continuous.max_num_seqs = 40"),
                 qPrintable(r.err));
        // The imported config exports to the same flags.
        const QString back = cli.path("back.json");
        VERIFY_RUN(cli.run({"import-config", flags, "-o", back}), 0);
        r = cli.run({"export-config", "--format", "tgi", "--config", back});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("--max-batch-size 40") && r.out.contains("--max-batch-prefill-tokens 768") &&
                     r.out.contains("--max-batch-total-tokens 20000"),
                 qPrintable(r.out));

        const QString pbtxt = cli.write("config.pbtxt", "max_batch_size: 8\ndynamic_batching {\n"
                                                        "  max_queue_delay_microseconds: 500\n}\n");
        r = cli.run({"import-config", pbtxt, "--json"});
        VERIFY_RUN(r, 0);
        j = json(r);
        QCOMPARE(j["format"].get<std::string>(), std::string("triton"));
        QCOMPARE(j["knobs"]["max_batch_size"].get<int>(), 8);
        QCOMPARE(j["knobs"]["max_queue_delay_us"].get<double>(), 500.0);
        QCOMPARE(j["settings"]["max_batch_size"].get<int>(), 8);
        QCOMPARE(j["config"]["policy"].get<std::string>(), std::string("dynamic"));

        const QString bad = cli.write("bad.pbtxt", "max_batch_size: 8\ndynamic_batching {\n  x: 1\n");
        r = cli.run({"import-config", bad, "--format", "triton"});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("bad.pbtxt: line 2: the '{' of dynamic_batching is never closed"),
                 qPrintable(r.err));
        r = cli.run({"import-config", cli.write("what.txt", "hello\n")});
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains("cannot tell which server's syntax"), qPrintable(r.err));
        VERIFY_RUN(cli.run({"import-config", pbtxt, "--format", "kserve"}), 2);
        VERIFY_RUN(cli.run({"import-config"}), 2);
        VERIFY_RUN(cli.run({"import-config", cli.path("missing.pbtxt")}), 1);
    }
};

QTEST_GUILESS_MAIN(TestCliInterop)
#include "test_cli_interop.moc"
