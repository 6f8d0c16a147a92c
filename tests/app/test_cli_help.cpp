// `batchpilot --help` and `batchpilot COMMAND --help` for every command:
// exit 0, a "Usage:" line, every option the parser accepts named as
// "--name" (the parsers and the help read the same tables: appOptionSpecs(),
// Command::options), and an option outside the table refused with exit 2.
#include "app/app_options.h"
#include "app/commands.h"
#include "tests/process_run.h"

#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

using namespace bp::app;

namespace {

using Run = bp::test::ProcessRun;

Run runApp(const QStringList &args)
{
    return bp::test::runProcess(QStringLiteral(BATCHPILOT_EXE), args, 60000);
}

bool namesOption(const QString &help, const QString &name)
{
    const QRegularExpression re(QStringLiteral("^  --%1( |$)").arg(QRegularExpression::escape(name)),
                                QRegularExpression::MultilineOption);
    return re.match(help).hasMatch();
}

QStringList optionLines(const QString &help)
{
    QStringList names;
    QRegularExpression line(QStringLiteral("^  --([a-z0-9-]+)"), QRegularExpression::MultilineOption);
    auto it = line.globalMatch(help);
    while (it.hasNext())
        names << it.next().captured(1);
    return names;
}

} // namespace

class TestCliHelp : public QObject {
    Q_OBJECT
private slots:
    void mainHelp()
    {
        const Run r = runApp({"--help"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.startsWith("Usage: batchpilot [OPTIONS]"), qPrintable(r.out));
        QStringList expected;
        for (const OptionSpec &o : appOptionSpecs()) {
            QVERIFY2(namesOption(r.out, o.name), qPrintable("--" + o.name + " missing from:\n" + r.out));
            expected << o.name;
        }
        QCOMPARE(optionLines(r.out), expected);
        for (const Command &c : commands())
            QVERIFY2(
                r.out.contains(QRegularExpression("^  " + c.name + " ", QRegularExpression::MultilineOption)),
                qPrintable(c.name));
    }

    // Every option of the table is one the parser takes: value options with
    // a value, flags alone (an unknown one would be refused).
    void mainParserAcceptsEveryListedOption()
    {
        for (const OptionSpec &o : appOptionSpecs()) {
            if (o.name == "help" || o.name == "version")
                continue;
            QStringList args{"batchpilot", "--" + o.name};
            if (o.name == "dtype")
                args << QStringLiteral("bfloat16");
            else if (o.name == "cuda-graphs")
                args << QStringLiteral("off");
            else if (!o.value.isEmpty())
                args << (o.name == "bind" || o.name == "token" || o.name == "db" || o.name == "model" ||
                                 o.name == "device" || o.name == "preset" || o.name == "config"
                             ? QStringLiteral("x")
                             : QStringLiteral("1"));
            const ParseOutcome parsed = parseAppOptions(args);
            QVERIFY2(parsed.options, qPrintable(o.name + ": " + parsed.error));
        }
        const ParseOutcome bad = parseAppOptions({"batchpilot", "--no-such-option"});
        QVERIFY(!bad.options);
        QVERIFY(bad.error.contains("unknown option --no-such-option"));
    }

    // --dtype and --cuda-graphs take their listed values only (ModelSpec::dtype, ::cudaGraphs).
    void modelFlags_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("dtype");      // empty: refused
        QTest::addColumn<bool>("cudaGraphs");
        QTest::addColumn<QString>("error");
        QTest::newRow("defaults") << QStringList{} << "auto" << true << "";
        for (const char *t : {"auto", "float32", "bfloat16", "float16"})
            QTest::newRow(t) << QStringList{"--dtype", t} << t << true << "";
        QTest::newRow("=form") << QStringList{"--dtype=float16", "--cuda-graphs=off"} << "float16" << false << "";
        QTest::newRow("graphs on") << QStringList{"--cuda-graphs", "on"} << "auto" << true << "";
        QTest::newRow("fp8") << QStringList{"--dtype", "fp8"} << "" << true
                             << "--dtype must be auto, float32, bfloat16 or float16, got 'fp8'";
        QTest::newRow("graphs yes") << QStringList{"--cuda-graphs", "yes"} << "" << true
                                    << "--cuda-graphs must be on or off, got 'yes'";
    }
    void modelFlags()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, dtype);
        QFETCH(bool, cudaGraphs);
        QFETCH(QString, error);
        const ParseOutcome parsed = parseAppOptions(QStringList{"batchpilot", "--headless"} + args);
        if (dtype.isEmpty()) {
            QVERIFY(!parsed.options);
            QCOMPARE(parsed.error, error);
            return;
        }
        QVERIFY2(parsed.options, qPrintable(parsed.error));
        QCOMPARE(parsed.options->dtype, dtype);
        QCOMPARE(parsed.options->cudaGraphs, cudaGraphs);
    }

    void commandHelp_data()
    {
        QTest::addColumn<QString>("name");
        // import-trace, export-trace, export-config, import-config, traces, sessions, replay, calibrate,
        // tune, plan, autoscale, report
        QCOMPARE(commands().size(), std::size_t(12));
        for (const Command &c : commands())
            QTest::newRow(qPrintable(c.name)) << c.name;
    }
    void commandHelp()
    {
        QFETCH(QString, name);
        const Command &c = *findCommand(name);
        const Run r = runApp({name, "--help"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.err.isEmpty(), qPrintable(r.err));
        QVERIFY2(r.out.startsWith(QStringLiteral("Usage: batchpilot %1 ").arg(name)), qPrintable(r.out));
        QStringList expected;
        for (const OptionSpec &o : c.options) {
            QVERIFY2(namesOption(r.out, o.name), qPrintable("--" + o.name + " missing from:\n" + r.out));
            expected << o.name;
        }
        for (const OptionSpec &o : appOptionSpecs()) // the common options follow
            expected << o.name;
        QCOMPARE(optionLines(r.out), expected);
    }

    void commandRefusesUnknownOption_data() { commandHelp_data(); }
    void commandRefusesUnknownOption()
    {
        QFETCH(QString, name);
        QTemporaryDir dir;
        const Run r = runApp({name, "--no-such-option", "--db", dir.filePath("none.sqlite")});
        QCOMPARE(r.code, 2);
        QVERIFY2(r.err.contains("unknown option --no-such-option"), qPrintable(r.err));
    }
};

QTEST_GUILESS_MAIN(TestCliHelp)
#include "test_cli_help.moc"
