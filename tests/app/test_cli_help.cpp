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
            if (!o.value.isEmpty())
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

    void commandHelp_data()
    {
        QTest::addColumn<QString>("name");
        // import-trace, export-trace, export-config, import-config, traces, sessions, replay, calibrate,
        // tune, plan, report
        QCOMPARE(commands().size(), std::size_t(11));
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
