// `batchpilot-bench STAGE --help` for every stage: exit 0, a "Usage:" line,
// and every option the stage's parser accepts named as "--name" (the parser
// and the help read the same table, so a new option cannot go unlisted); an
// option outside the table is refused with exit 2.
#include "bench/bench_util.h"
#include "tests/process_run.h"

#include <QProcess>
#include <QRegularExpression>
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

    void eachStagePrintsEveryOption_data()
    {
        QTest::addColumn<int>("index");
        const auto stages = benchStages();
        QCOMPARE(stages.size(), std::size_t(7)); // scheduler, profile, load, store, fidelity, device-check, bandwidth
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
