// `batchpilot report` as the real binary: the three formats by extension,
// PDF without a display (the command picks the offscreen platform itself),
// `last`, and clear errors with non-zero exit codes for an unknown session,
// an unknown extension, an unwritable path and a missing database.
#include "report_fixture.h"

#include "engine/store/session_summary.h"

#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

using namespace bp;

namespace {

struct Run {
    int code = -1;
    QString out, err;
};

Run batchpilot(const QStringList &args, bool withoutDisplay = false)
{
    QProcess p;
    if (withoutDisplay) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char *var : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"})
            env.remove(var);
        p.setProcessEnvironment(env);
    }
    p.start(QStringLiteral(BATCHPILOT_EXE), args);
    if (!p.waitForFinished(120000))
        return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, QString::fromUtf8(p.readAllStandardOutput()),
            QString::fromUtf8(p.readAllStandardError())};
}

QByteArray readAll(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

} // namespace

class TestCliReport : public QObject {
    Q_OBJECT
    std::unique_ptr<test::ReportFixture> f;
    QString db;

    QString out(const QString &name) const { return f->dir.filePath(name); }

private slots:
    void initTestCase()
    {
        f = test::buildReportFixture();
        QVERIFY2(f->error.isEmpty(), qPrintable(f->error));
        db = f->dbPath();
    }

    void writesEachFormat()
    {
        const QString id = QString::number(f->live);
        Run html = batchpilot({"report", id, "-o", out("r.html"), "--db", db});
        QVERIFY2(html.code == 0, qPrintable(html.err));
        QVERIFY(html.out.contains("wrote the HTML report of session " + id));
        QVERIFY(readAll(out("r.html")).startsWith("<!DOCTYPE html>"));

        Run json = batchpilot({"report", id, "--output=" + out("r.json"), "--db", db});
        QVERIFY2(json.code == 0, qPrintable(json.err));
        const auto j = nlohmann::json::parse(readAll(out("r.json")).toStdString());
        QVERIFY(j["headline"]["throughput_rps"] == toJson(f->store->summary(f->live).value())["throughput_rps"]);

        Run pdf = batchpilot({"report", id, "-o", out("r.pdf"), "--db", db}, true);
        QVERIFY2(pdf.code == 0, qPrintable(pdf.err));
        QVERIFY(readAll(out("r.pdf")).startsWith("%PDF-"));
    }

    void lastIsTheNewestSession()
    {
        Run r = batchpilot({"report", "last", "-o", out("last.json"), "--db", db});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        const auto j = nlohmann::json::parse(readAll(out("last.json")).toStdString());
        QCOMPARE(j["session"]["id"].get<std::int64_t>(), f->replay);
        QVERIFY(!j["comparison"].is_null());
    }

    void errors_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<int>("code");
        QTest::addColumn<QString>("message");
        QTest::newRow("unknown session") << QStringList{"report", "999", "-o", "@/x.html"} << 1 << "no session 999";
        QTest::newRow("unknown extension") << QStringList{"report", "1", "-o", "@/x.docx"} << 2 << "must end in .html, .pdf or .json";
        QTest::newRow("no extension") << QStringList{"report", "1", "-o", "@/x"} << 2 << "cannot tell the format";
        QTest::newRow("unwritable path") << QStringList{"report", "1", "-o", "@/no/such/dir/x.html"} << 1 << "cannot write";
        QTest::newRow("directory as file") << QStringList{"report", "1", "-o", "@"} << 2 << "cannot tell the format";
        QTest::newRow("no output") << QStringList{"report", "1"} << 2 << "usage: batchpilot report";
        QTest::newRow("bad id") << QStringList{"report", "abc", "-o", "@/x.html"} << 2 << "must be a session id";
        QTest::newRow("unknown flag") << QStringList{"report", "1", "-o", "@/x.html", "--colour"} << 2 << "unknown option --colour";
    }
    void errors()
    {
        QFETCH(QStringList, args);
        QFETCH(int, code);
        QFETCH(QString, message);
        args.replaceInStrings(QStringLiteral("@"), f->dir.path());
        Run r = batchpilot(args << "--db" << db);
        QCOMPARE(r.code, code);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
        QVERIFY(r.err.contains(QRegularExpression(QStringLiteral("(^|\\n)batchpilot report: "))));
        QVERIFY(!QFile::exists(out("x.html")));
    }

    void missingDatabaseIsNotCreated()
    {
        const QString missing = out("missing.sqlite");
        Run r = batchpilot({"report", "1", "-o", out("m.html"), "--db", missing});
        QCOMPARE(r.code, 1);
        QVERIFY2(!r.err.isEmpty(), qPrintable(r.err));
        QVERIFY(!QFile::exists(missing));
        QVERIFY(!QFile::exists(out("m.html")));
    }
};

QTEST_GUILESS_MAIN(TestCliReport)
#include "test_cli_report.moc"
