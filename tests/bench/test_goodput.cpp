// Goodput in `batchpilot-bench load` (bench/load_run.h): the --slo parser
// (any subset of ttft, tpot, e2e, units in the value, a clear error for a
// malformed spec) and the counting rule: goodput = the window's arrivals that
// completed OK and met every given bound, per second of window (vLLM's
// benchmark_serving, DistServe).
#include "bench/load_run.h"

#include <QtTest>

using namespace bp;
using namespace bp::bench;

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

LoadSample sample(milliseconds arrival, milliseconds e2e, milliseconds ttft, milliseconds tpot,
                  StatusCode status = StatusCode::Ok)
{
    LoadSample s;
    s.arrival = arrival;
    s.latency = e2e;
    s.ttft = ttft;
    s.tpot = tpot;
    s.status = status;
    s.inputTokens = 10;
    s.outputTokens = tpot > milliseconds(0) ? 8 : 1;
    return s;
}

} // namespace

class TestGoodput : public QObject {
    Q_OBJECT
private slots:
    void parsesAnySubsetWithUnits()
    {
        auto both = parseSlo("ttft=500ms,tpot=50ms");
        QVERIFY2(both, both.status().message().c_str());
        QVERIFY(both->ttft == milliseconds(500));
        QVERIFY(both->tpot == milliseconds(50));
        QVERIFY(both->e2e == Duration::zero());
        QVERIFY(both->tokenLevel());

        auto e2e = parseSlo("e2e=2s");
        QVERIFY(e2e);
        QVERIFY(e2e->e2e == seconds(2));
        QVERIFY(e2e->ttft == Duration::zero() && e2e->tpot == Duration::zero());
        QVERIFY(e2e->any() && !e2e->tokenLevel());

        auto all = parseSlo("e2e=1.5s,tpot=250us,ttft=0.2s");
        QVERIFY(all);
        QVERIFY(all->e2e == milliseconds(1500));
        QVERIFY(all->tpot == microseconds(250));
        QVERIFY(all->ttft == milliseconds(200));
        QCOMPARE(describe(*all), std::string("ttft <= 200ms, tpot <= 250µs, e2e <= 1.5s"));
        QVERIFY(parseSlo("tpot=250µs")->tpot == microseconds(250));
        QVERIFY(describe(Slo{}).empty());
    }

    void malformedSpecsAreRefusedClearly_data()
    {
        QTest::addColumn<QString>("spec");
        QTest::addColumn<QString>("why");
        QTest::newRow("empty") << ""
                               << "empty";
        QTest::newRow("no equals") << "ttft"
                                   << "has no '='";
        QTest::newRow("no number") << "ttft=ms"
                                   << "has no number";
        QTest::newRow("no unit") << "ttft=500"
                                 << "needs a unit";
        QTest::newRow("bad unit") << "ttft=5min"
                                  << "needs a unit";
        QTest::newRow("unknown bound") << "itl=5ms"
                                       << "unknown bound 'itl'";
        QTest::newRow("twice") << "ttft=5ms,ttft=6ms"
                               << "given twice";
        QTest::newRow("zero") << "tpot=0ms"
                              << "must be positive";
        QTest::newRow("negative") << "e2e=-1s"
                                  << "must be positive";
        QTest::newRow("trailing comma") << "ttft=5ms,"
                                        << "empty item";
        QTest::newRow("empty middle") << "ttft=5ms,,tpot=1ms"
                                      << "empty item";
    }
    void malformedSpecsAreRefusedClearly()
    {
        QFETCH(QString, spec);
        QFETCH(QString, why);
        auto parsed = parseSlo(spec.toStdString());
        QVERIFY(!parsed);
        QCOMPARE(parsed.status().code(), StatusCode::InvalidArgument);
        const QString message = QString::fromStdString(parsed.status().message());
        QVERIFY2(message.contains(why), qPrintable(message));
        QVERIFY2(message.startsWith("--slo '" + spec + "'"), qPrintable(message));
        QVERIFY2(message.contains("ttft=500ms"), qPrintable(message)); // says what a good one looks like
    }

    // Window [2 s, 4 s), SLO ttft <= 500 ms, tpot <= 50 ms: of 8 window
    // arrivals, 3 meet every bound (one exactly at both bounds, one with a
    // single token and so no TPOT); goodput = 3 / 2 s. The warm-up and
    // post-window arrivals that meet it add nothing.
    void goodputCountsWindowArrivalsMeetingEveryBound()
    {
        const Slo slo = *parseSlo("ttft=500ms,tpot=50ms");
        const std::vector<LoadSample> samples{
            sample(milliseconds(2000), milliseconds(900), milliseconds(100), milliseconds(20)), // good
            sample(milliseconds(2100), milliseconds(900), milliseconds(500),
                   milliseconds(50)), // good: bounds are <=
            sample(milliseconds(2200), milliseconds(300), milliseconds(300),
                   milliseconds(0)), // good: 1 token, no TPOT
            sample(milliseconds(2300), milliseconds(900), milliseconds(501), milliseconds(20)), // TTFT missed
            sample(milliseconds(2400), milliseconds(900), milliseconds(100), milliseconds(51)), // TPOT missed
            sample(milliseconds(2500), milliseconds(900), milliseconds(0), milliseconds(0)), // no first token
            sample(milliseconds(2600), milliseconds(90), milliseconds(10), milliseconds(1),
                   StatusCode::Internal),
            sample(milliseconds(3999), milliseconds(9000), milliseconds(10), milliseconds(1),
                   StatusCode::ShuttingDown),                                                 // unfinished
            sample(milliseconds(1999), milliseconds(100), milliseconds(10), milliseconds(1)), // warm-up
            sample(milliseconds(4000), milliseconds(100), milliseconds(10),
                   milliseconds(1)), // after the window
        };
        const WindowFigures f = summarizeWindow(samples, seconds(2), seconds(4), slo);
        QCOMPARE(f.arrived, std::uint64_t(8));
        QCOMPARE(f.completed, std::uint64_t(6));
        QCOMPARE(f.good, std::uint64_t(3));
        QCOMPARE(f.goodputPerS, 1.5);
        QCOMPARE(f.requestsPerS, 3.0);
        QCOMPARE(f.attainment(), 3.0 / 8.0);
        // TPOT percentiles over the completed requests that have one (2+ tokens).
        QCOMPARE(f.tpot.count(), std::uint64_t(4));
        QCOMPARE(f.ttft.count(), std::uint64_t(5));
    }

    void e2eBoundAlone()
    {
        const Slo slo = *parseSlo("e2e=1s");
        const std::vector<LoadSample> samples{
            sample(milliseconds(100), milliseconds(1000), milliseconds(0),
                   milliseconds(0)), // good (no tokens needed)
            sample(milliseconds(200), milliseconds(1001), milliseconds(0), milliseconds(0)), // missed
            sample(milliseconds(300), milliseconds(10), milliseconds(0), milliseconds(0)),   // good
        };
        const WindowFigures f = summarizeWindow(samples, seconds(0), seconds(1), slo);
        QCOMPARE(f.good, std::uint64_t(2));
        QCOMPARE(f.goodputPerS, 2.0);
    }

    // Without an SLO every completed request is good: goodput = throughput.
    void noSloGoodputIsThroughput()
    {
        const std::vector<LoadSample> samples{
            sample(milliseconds(100), milliseconds(5000), milliseconds(4000), milliseconds(900)),
            sample(milliseconds(200), milliseconds(10), milliseconds(1), milliseconds(1),
                   StatusCode::Internal),
        };
        const WindowFigures f = summarizeWindow(samples, seconds(0), seconds(1));
        QCOMPARE(f.good, f.completed);
        QCOMPARE(f.goodputPerS, f.requestsPerS);
    }
};

QTEST_GUILESS_MAIN(TestGoodput)
#include "test_goodput.moc"
