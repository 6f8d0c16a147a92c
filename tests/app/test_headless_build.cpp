// The batchpilot binary in each build (BATCHPILOT_GUI; docs/packaging.md,
// "The headless build"). With Qt Gui it links Qt Widgets and writes PDF
// reports. Without (the headless build) it links no Qt Gui, Widgets,
// Charts or Svg at all, refuses the console and PDF reports with the reason
// and a non-zero exit code, and still writes HTML and JSON reports. The
// suite runs in both builds; each checks its own side.
#include "tests/process_run.h"
#include "tests/report/report_fixture.h"

#include <QRegularExpression>
#include <QStandardPaths>
#include <QtTest>

namespace {

constexpr bool kHasGui = BATCHPILOT_HAS_GUI;
const QString kNoQtGui = QStringLiteral("this build has no Qt Gui (BATCHPILOT_GUI=OFF)");

bp::test::ProcessRun batchpilot(const QStringList &args)
{
    return bp::test::runProcess(QStringLiteral(BATCHPILOT_EXE), args, 60000);
}

QByteArray readAll(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

#define VERIFY_RUN(r, expected)                                                                              \
    QVERIFY2((r).code == (expected),                                                                         \
             qPrintable(QString("exit %1, stdout: %2, stderr: %3").arg((r).code).arg((r).out, (r).err)))

} // namespace

class TestHeadlessBuild : public QObject {
    Q_OBJECT
    std::unique_ptr<bp::test::ReportFixture> m_fixture;

private slots:
    void initTestCase()
    {
        m_fixture = bp::test::buildReportFixture();
        QVERIFY2(m_fixture->error.isEmpty(), qPrintable(m_fixture->error));
    }

    void linksWhatTheBuildHas()
    {
        const QString ldd = QStandardPaths::findExecutable("ldd");
        if (ldd.isEmpty())
            QSKIP("ldd not found");
        const auto r = bp::test::runProcess(ldd, {QStringLiteral(BATCHPILOT_EXE)});
        VERIFY_RUN(r, 0);
        QStringList qt; // "Core", "Network", ... of every libQt6*.so it loads
        static const QRegularExpression lib(QStringLiteral("libQt6(\\w+)\\.so"));
        for (auto it = lib.globalMatch(r.out); it.hasNext();)
            qt << it.next().captured(1);
        for (const char *needed : {"Core", "Network", "HttpServer"})
            QVERIFY2(qt.contains(needed), qPrintable(qt.join(' ')));
        for (const char *gui : {"Gui", "Widgets", "Charts", "Svg"})
            QVERIFY2(qt.contains(gui) == kHasGui, qPrintable(QString("%1 in: %2").arg(gui, qt.join(' '))));
    }

    void helpAndVersion()
    {
        auto r = batchpilot({"--version"});
        VERIFY_RUN(r, 0);
        QVERIFY(r.out.startsWith("batchpilot "));
        r = batchpilot({"--help"});
        VERIFY_RUN(r, 0);
        QVERIFY(r.out.contains("--headless"));
        QVERIFY(r.out.contains("--dtype auto|float32|bfloat16|float16"));
        QVERIFY(r.out.contains("--cuda-graphs on|off"));
    }

    void consoleNeedsQtGui()
    {
        if (kHasGui)
            QSKIP("this build has the console (started here it would open a window)");
        const auto r = batchpilot({"--model", "builtin:echo", "--no-log"});
        VERIFY_RUN(r, 2);
        QVERIFY2(r.err.contains(kNoQtGui), qPrintable(r.err));
        QVERIFY2(r.err.contains("the console is not built"), qPrintable(r.err));
        QVERIFY2(r.err.contains("--headless"), qPrintable(r.err)); // says what does work
        QVERIFY(r.out.isEmpty());
    }

    void reports_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("startsWith");
        QTest::newRow("html") << "r.html" << QByteArray("<!DOCTYPE html>");
        QTest::newRow("json") << "r.json" << QByteArray("{");
        QTest::newRow("pdf") << "r.pdf" << QByteArray("%PDF-");
    }
    void reports()
    {
        QFETCH(QString, file);
        QFETCH(QByteArray, startsWith);
        const QString path = m_fixture->dir.filePath(file);
        const auto r = batchpilot({"report", QString::number(m_fixture->live), "-o", path, "--db",
                                   m_fixture->dbPath()});
        if (kHasGui || !file.endsWith(".pdf")) {
            VERIFY_RUN(r, 0);
            QVERIFY2(readAll(path).trimmed().startsWith(startsWith), qPrintable(path));
            return;
        }
        VERIFY_RUN(r, 1);
        QVERIFY2(r.err.contains(kNoQtGui + ": PDF reports need it; HTML and JSON work"), qPrintable(r.err));
        QVERIFY(!QFile::exists(path));
    }
};

QTEST_GUILESS_MAIN(TestHeadlessBuild)
#include "test_headless_build.moc"
