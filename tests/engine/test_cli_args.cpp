// The shared command-line parser (engine/core/cli_args.h): what it accepts,
// the errors it names, and the --help rows it lays out.
#include "engine/core/cli_args.h"

#include <QtTest>

using namespace bp::cli;

namespace {
const OptionTable kTable = {
    {"rate", "R", "offered requests/s"},
    {"db", "PATH", "the store"},
    {"json", "", "print JSON"},
};
} // namespace

class TestCliArgs : public QObject {
    Q_OBJECT
private slots:
    void readsValuesFlagsAndPositionals()
    {
        Args a({"7", "--rate", "2.5", "--db=x.sqlite", "--json", "tail"}, kTable);
        QVERIFY(a.ok());
        QCOMPARE(a.positional(), (std::vector<std::string>{"7", "tail"}));
        QCOMPARE(a.value("rate"), std::string("2.5"));
        QCOMPARE(a.value("db"), std::string("x.sqlite"));
        QVERIFY(a.has("json"));
        QCOMPARE(a.value("json"), std::string("1"));
        QVERIFY(!a.has("missing"));
        QCOMPARE(a.value("missing", "fb"), std::string("fb"));
    }

    void aValueOptionTakesTheNextArgumentAsIs()
    {
        Args a({"--db", "--json"}, kTable); // the next argument is the value, whatever it looks like
        QVERIFY(a.ok());
        QCOMPARE(a.value("db"), std::string("--json"));
        QVERIFY(!a.has("json"));
        Args last({"--rate", "1", "--rate", "3"}, kTable);
        QCOMPARE(last.value("rate"), std::string("3"));
    }

    void namesTheFirstProblem()
    {
        QCOMPARE(Args({"--rate"}, kTable).error(), std::string("option --rate needs a value"));
        QCOMPARE(Args({"--json=yes"}, kTable).error(), std::string("option --json takes no value"));
        QCOMPARE(Args({"--raet", "2", "--bogus"}, kTable).error(), std::string("unknown option --raet"));
        QVERIFY(!Args({"--raet", "2"}, kTable).ok());
    }

    void checksNumbers()
    {
        Args a({"--rate", "2.5"}, kTable);
        QCOMPARE(a.number("rate", 1, 0, 10), std::optional<double>(2.5));
        QCOMPARE(a.number("db", 4, 0, 10), std::optional<double>(4)); // absent: the fallback
        QVERIFY(a.ok());
        Args high({"--rate", "20"}, kTable);
        QVERIFY(!high.number("rate", 1, 0, 10));
        QCOMPARE(high.error(), std::string("--rate must be a number in [0, 10], got '20'"));
        Args junk({"--rate", "2x"}, kTable);
        QVERIFY(!junk.number("rate", 1, 0.5, 1e6));
        QCOMPARE(junk.error(), std::string("--rate must be a number in [0.5, 1e+06], got '2x'"));
        Args empty({"--rate="}, kTable);
        QVERIFY(!empty.number("rate", 1, 0, 10));
    }

    void splitsLists()
    {
        Args a({"--db", "a,,b,"}, kTable);
        QCOMPARE(a.list("db"), (std::vector<std::string>{"a", "b"}));
        QCOMPARE(a.list("rate", "1,2"), (std::vector<std::string>{"1", "2"}));
        QVERIFY(a.list("rate").empty());
    }

    void convertsArgv()
    {
        const char *argv[] = {"prog", "stage", "--json", "x"};
        QCOMPARE(Args::fromArgv(4, argv, 2), (std::vector<std::string>{"--json", "x"}));
    }

    void alignsHelpRows()
    {
        QCOMPARE(formatOptions(kTable, 26), std::string("  --rate R   offered requests/s\n"
                                                        "  --db PATH  the store\n"
                                                        "  --json     print JSON\n"));
        // A left side past the cap puts its help on the next line.
        QCOMPARE(formatOptions({{"a", "", "short"}, {"much-longer-name", "VALUE", "long"}}, 8),
                 std::string("  --a       short\n"
                             "  --much-longer-name VALUE\n"
                             "            long\n"));
        // Width counts characters, not UTF-8 bytes.
        QCOMPARE(formatOptions({{"t", "\xc2\xb5s", "time"}, {"xx", "", "x"}}, 26),
                 std::string("  --t \xc2\xb5s  time\n"
                             "  --xx    x\n"));
    }
};

QTEST_APPLESS_MAIN(TestCliArgs)
#include "test_cli_args.moc"
