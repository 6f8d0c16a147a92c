// `batchpilot-bench STAGE --help` for every stage: exit 0, a "Usage:" line,
// and every option the stage's parser accepts named as "--name" (the parser
// and the help read the same table, so a new option cannot go unlisted); an
// option outside the table is refused with exit 2.
#include "bench/bench_util.h"
#include "engine/model/model_registry.h"
#include "tests/process_run.h"

#include <nlohmann/json.hpp>

#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

using namespace bp::bench;

namespace {

using Run = bp::test::ProcessRun;

Run runBench(const QStringList &args)
{
    return bp::test::runProcess(QStringLiteral(BATCHPILOT_BENCH_EXE), args, 60000);
}

// "--name" as an option line's own token: followed by a space or the end of the line.
bool namesOption(const QString &help, const std::string &name)
{
    const QRegularExpression re(
        QStringLiteral("^  --%1( |$)").arg(QRegularExpression::escape(QString::fromStdString(name))),
        QRegularExpression::MultilineOption);
    return re.match(help).hasMatch();
}

} // namespace

class TestBenchHelp : public QObject {
    Q_OBJECT
private slots:
    void topLevelListsEveryStage()
    {
        const Run r = runBench({"--help"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith("Usage: batchpilot-bench STAGE"), qPrintable(r.out));
        for (const StageOptions *stage : benchStages())
            QVERIFY2(r.out.contains(
                         QRegularExpression(QStringLiteral("^  %1 ").arg(QString::fromStdString(stage->name)),
                                            QRegularExpression::MultilineOption)),
                     stage->name.c_str());
    }

    // `steps` on the tiny Qwen 3 MoE fixture (8 experts, top 2, 2 MoE
    // layers): one decode reads its top 2 experts per layer, a batch of 16
    // more (at most all 8); each row has a step time; the fit is reported.
    void stepsStageMeasuresActiveExperts()
    {
        QTemporaryDir dir;
        const QByteArray root = qgetenv("BATCHPILOT_SOURCE_DIR");
        const QString json = dir.filePath("steps.json");
        const Run r = runBench({"steps", "--model",
                                "hf:" + QString::fromUtf8(root.isEmpty() ? QByteArray(".") : root) +
                                    "/tests/fixtures/hf/qwen3-moe",
                                "--device", "cpu", "--threads", "1", "--batches", "1,16", "--context", "4",
                                "--steps", "2", "--json", json});
        if (!bp::torchAvailable()) {
            // the no-torch build (the ThreadSanitizer preset) refuses by name
            QVERIFY2(r.code != 0 && r.err.contains("needs libtorch"), qPrintable(r.out + r.err));
            QSKIP("this build has no libtorch: the refusal was checked, the measurement needs torch");
        }
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY(r.out.contains("active experts"));
        QFile f(json);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const auto j = nlohmann::json::parse(f.readAll().toStdString());
        QCOMPARE(j["experts"].get<int>(), 8);
        QCOMPARE(j["moe_layers"].get<int>(), 2);
        QCOMPARE(j["rows"].size(), std::size_t(2));
        QCOMPARE(j["rows"][0]["active_experts"].get<double>(), 2.0);
        const double many = j["rows"][1]["active_experts"].get<double>();
        QVERIFY2(many > 2 && many <= 8, qPrintable(QString::number(many)));
        QVERIFY(j["rows"][1]["step_s"].get<double>() > 0);
        QVERIFY(j["fit"].contains("s6_s_per_active_expert"));
        // a model without step-level generation is refused by name
        const Run encoder = runBench({"steps", "--model", "builtin:tiny-encoder", "--device", "cpu"});
        QCOMPARE(encoder.code, 1);
        QVERIFY2(encoder.err.contains("has no step-level generation"), qPrintable(encoder.err));
    }

    // profile sizes a paged decoder's KV cache for its largest batch (each
    // sequence of the model's full length), not the CPU's gigabyte cap.
    void profileSizesTheKvCacheForItsLargestBatch()
    {
        const Run r = runBench({"profile",
                                "--model",
                                "builtin:tiny-decoder",
                                "--preset",
                                "test",
                                "--device",
                                "cpu",
                                "--threads",
                                "1",
                                "--batches",
                                "1,3",
                                "--lengths",
                                "8",
                                "--new-tokens",
                                "2",
                                "--warmup",
                                "0",
                                "--repeats",
                                "1",
                                "--quiet"});
        if (!bp::torchAvailable()) {
            QVERIFY2(r.code != 0, qPrintable(r.out + r.err));
            QSKIP("this build has no libtorch: the built-in decoder needs torch");
        }
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(r.out.contains("sized for 3 sequences of 256 tokens") ||
                     r.err.contains("sized for 3 sequences of 256 tokens"),
                 qPrintable(r.out + r.err));
    }

    void eachStagePrintsEveryOption_data()
    {
        QTest::addColumn<int>("index");
        const auto stages = benchStages();
        // scheduler, profile, load, store, fidelity, device-check, bandwidth, steps
        QCOMPARE(stages.size(), std::size_t(8));
        for (std::size_t i = 0; i < stages.size(); ++i)
            QTest::newRow(stages[i]->name.c_str()) << int(i);
    }
    void eachStagePrintsEveryOption()
    {
        QFETCH(int, index);
        const StageOptions &stage = *benchStages()[std::size_t(index)];
        const Run r = runBench({QString::fromStdString(stage.name), "--help"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
        QVERIFY2(r.out.startsWith(
                     QStringLiteral("Usage: batchpilot-bench %1 ").arg(QString::fromStdString(stage.name))),
                 qPrintable(r.out));
        QVERIFY(r.out.contains("\nOptions:\n"));
        QVERIFY(!stage.options.empty());
        for (const auto &name : stage.names())
            QVERIFY2(namesOption(r.out, name),
                     qPrintable(
                         QStringLiteral("--%1 missing from:\n%2").arg(QString::fromStdString(name), r.out)));
        QVERIFY(namesOption(r.out, "help"));
        // Every option line the help prints is one the parser accepts.
        QRegularExpression line(QStringLiteral("^  --([a-z0-9-]+)"), QRegularExpression::MultilineOption);
        auto it = line.globalMatch(r.out);
        int lines = 0;
        while (it.hasNext()) {
            const std::string name = it.next().captured(1).toStdString();
            ++lines;
            const auto names = stage.names();
            QVERIFY2(name == "help" || std::find(names.begin(), names.end(), name) != names.end(),
                     name.c_str());
        }
        QCOMPARE(lines, int(stage.options.size()) + 1);
    }

    void unknownOptionIsRefused_data()
    {
        QTest::addColumn<QString>("stage");
        for (const StageOptions *stage : benchStages())
            QTest::newRow(stage->name.c_str()) << QString::fromStdString(stage->name);
    }
    void unknownOptionIsRefused()
    {
        QFETCH(QString, stage);
        const Run r = runBench({stage, "--no-such-option", "3"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("unknown option --no-such-option"), qPrintable(r.err));
        QVERIFY2(r.err.contains("--help"), qPrintable(r.err));
    }

    // A malformed --slo is refused (exit 2) with what is wrong and what a
    // good one looks like, before any model is loaded.
    void loadRefusesMalformedSlo()
    {
        const Run r = runBench({"load", "--slo", "ttft=500,tpot=50ms"});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("--slo 'ttft=500,tpot=50ms': 'ttft=500' needs a unit"), qPrintable(r.err));
        QVERIFY2(r.err.contains("ttft=500ms,tpot=50ms"), qPrintable(r.err));
        QVERIFY2(r.out.isEmpty(), qPrintable(r.out));
    }
};

QTEST_GUILESS_MAIN(TestBenchHelp)
#include "test_bench_help.moc"
