// `batchpilot import-trace --sample` as a new user runs it: from the build
// tree, and from an installed tree (cmake --install into a temporary
// prefix: the installed binary must find PREFIX/share/batchpilot, not the
// build tree), plus the usage errors.
#include "tests/process_run.h"

#include <QtTest>

#include <nlohmann/json.hpp>

namespace {

using Run = bp::test::ProcessRun;

Run run(const QString &program, const QStringList &args)
{
    return bp::test::runProcess(program, args, 180000);
}

#define VERIFY_RUN(r, expected)                                                                              \
    QVERIFY2((r).code == (expected),                                                                         \
             qPrintable(QString("exit %1, stdout: %2, stderr: %3").arg((r).code).arg((r).out, (r).err)))

// The one trace in `db`, as `traces --json` lists it.
nlohmann::json onlyTrace(const QString &exe, const QString &db)
{
    const Run r = run(exe, {"traces", "--json", "--db", db});
    if (r.code != 0)
        return {};
    const auto list = nlohmann::json::parse(r.out.toStdString(), nullptr, false);
    return list.is_array() && list.size() == 1 ? list[0] : nlohmann::json();
}

} // namespace

class TestCliSample : public QObject {
    Q_OBJECT
private slots:
    void importsTheSampleFromTheBuildTree()
    {
        QTemporaryDir dir;
        const QString db = dir.filePath("t.sqlite");
        const Run r = run(BATCHPILOT_EXE, {"import-trace", "--sample", "--db", db});
        VERIFY_RUN(r, 0);
        QVERIFY2(r.out.contains("imported trace 1 'azure_llm_conv_2023' (azure format): 19366 requests"),
                 qPrintable(r.out));
        // ... and says how to replay it, with a command that works.
        QVERIFY2(r.out.contains("batchpilot replay 1 --trace --virtual --model builtin:echo"),
                 qPrintable(r.out));
        const nlohmann::json t = onlyTrace(BATCHPILOT_EXE, db);
        QCOMPARE(t.value("rows", 0), 19366);
        QCOMPARE(QString::fromStdString(t.value("source_path", "")),
                 QStringLiteral(BATCHPILOT_BUILD_DIR "/share/batchpilot/traces/azure_llm_conv_2023.csv"));
        const Run replay = run(BATCHPILOT_EXE, {"replay", "1", "--trace", "--virtual", "--model",
                                                "builtin:echo", "--limit", "500", "--db", db});
        VERIFY_RUN(replay, 0);
        QVERIFY2(replay.out.contains("replay of trace 1"), qPrintable(replay.out));
    }

    void importsTheSampleFromAnInstalledTree()
    {
        QTemporaryDir prefix;
        const Run install = run(QStringLiteral(CMAKE_COMMAND),
                                {"--install", BATCHPILOT_BUILD_DIR, "--prefix", prefix.path()});
        VERIFY_RUN(install, 0);
        const QString exe = prefix.filePath("bin/batchpilot");
        QVERIFY(QFileInfo(exe).isExecutable());
        const QString db = prefix.filePath("t.sqlite");
        const Run r = run(exe, {"import-trace", "--sample", "--json", "--db", db});
        VERIFY_RUN(r, 0);
        const auto j = nlohmann::json::parse(r.out.toStdString(), nullptr, false);
        QCOMPARE(j.value("rows", 0), 19366);
        QCOMPARE(j.value("format", ""), std::string("azure"));
        // Found next to the installed binary, not in the build tree.
        QCOMPARE(QString::fromStdString(onlyTrace(exe, db).value("source_path", "")),
                 prefix.filePath("share/batchpilot/traces/azure_llm_conv_2023.csv"));
        // The credit travels with the data.
        QFile credit(prefix.filePath("share/batchpilot/traces/README"));
        QVERIFY(credit.open(QIODevice::ReadOnly));
        QVERIFY(credit.readAll().contains("CC-BY 4.0"));
    }

    void sampleWithAFileIsAUsageError()
    {
        QTemporaryDir dir;
        const Run r =
            run(BATCHPILOT_EXE, {"import-trace", "--sample", "other.csv", "--db", dir.filePath("t.sqlite")});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains("--sample"), qPrintable(r.err));
        const Run none = run(BATCHPILOT_EXE, {"import-trace", "--db", dir.filePath("t.sqlite")});
        VERIFY_RUN(none, 2);
        QVERIFY2(none.err.contains("FILE|--sample"), qPrintable(none.err));
    }
};

QTEST_GUILESS_MAIN(TestCliSample)
#include "test_cli_sample.moc"
