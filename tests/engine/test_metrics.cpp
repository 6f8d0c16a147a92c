// Metrics against known distributions: histogram quantiles within the
// documented 1.6% error, windowed rates on a fake clock, padding efficiency.
#include "engine/metrics.h"

#include <QtTest>

#include <algorithm>
#include <random>

using namespace bp;
using namespace std::chrono_literals;

class TestMetrics : public QObject {
    Q_OBJECT
private slots:
    void histogramExactBelow64()
    {
        LatencyHistogram h;
        for (int i = 1; i <= 50; ++i)
            h.record(i);
        QCOMPARE(h.quantile(0.5), std::int64_t(25));
        QCOMPARE(h.quantile(1.0), std::int64_t(50));
        QCOMPARE(h.quantile(0.0), std::int64_t(1));
        QCOMPARE(h.count(), std::uint64_t(50));
        QCOMPARE(h.countAtOrBelow(10), std::uint64_t(10));
    }

    void bucketBoundsAreConsistent()
    {
        for (std::int64_t v : {64LL, 65LL, 127LL, 128LL, 1000LL, 123456789LL, 1LL << 39}) {
            const int i = LatencyHistogram::bucketIndex(v);
            QVERIFY(LatencyHistogram::bucketLow(i) <= v);
            QVERIFY(v < LatencyHistogram::bucketHigh(i));
        }
    }

    void quantilesOfUniformAndExponential_data()
    {
        QTest::addColumn<QString>("dist");
        QTest::newRow("uniform") << "uniform";
        QTest::newRow("exponential") << "exponential";
        QTest::newRow("lognormal tail") << "lognormal";
    }
    void quantilesOfUniformAndExponential()
    {
        QFETCH(QString, dist);
        std::mt19937_64 rng(42);
        std::uniform_real_distribution<double> uni(1e3, 1e7);
        std::exponential_distribution<double> expo(1.0 / 2e5);
        std::lognormal_distribution<double> logn(12.0, 1.5);
        std::vector<std::int64_t> values(200000);
        for (auto &v : values) {
            const double x = dist == "uniform" ? uni(rng) : dist == "exponential" ? expo(rng) : logn(rng);
            v = std::int64_t(x);
        }
        LatencyHistogram h;
        for (auto v : values)
            h.record(v);
        std::sort(values.begin(), values.end());
        for (double q : {0.5, 0.9, 0.99, 0.999}) {
            const auto exact = double(values[std::size_t(std::ceil(q * double(values.size()))) - 1]);
            const double got = double(h.quantile(q));
            QVERIFY2(std::abs(got - exact) <= 0.016 * exact + 1,
                     qPrintable(QString("q=%1 exact=%2 got=%3").arg(q).arg(exact).arg(got)));
        }
        QCOMPARE(h.max(), values.back());
    }

    void mergeEqualsRecordingTogether()
    {
        LatencyHistogram a, b, all;
        for (int i = 0; i < 1000; ++i) {
            (i % 2 ? a : b).record(i * 997);
            all.record(i * 997);
        }
        a.merge(b);
        for (double q : {0.1, 0.5, 0.99})
            QCOMPARE(a.quantile(q), all.quantile(q));
        QCOMPARE(a.mean(), all.mean());
    }

    void windowThroughputAndPadding()
    {
        const TimePoint start = TimePoint(1000s);
        MetricsRecorder m(start);
        // 100 batches of 4 requests over 1 s: 400 req/s, 10 tokens in, 5 out each
        for (int i = 0; i < 100; ++i) {
            const TimePoint t = start + 10ms * i;
            BatchRecord b;
            b.id = std::uint64_t(i + 1);
            b.size = 4;
            b.paddedLength = 16;
            b.realTokens = 40;
            b.paddedTokens = 64;
            b.compute = 5ms;
            std::vector<RequestRecord> rs(4);
            for (auto &r : rs) {
                r.inputTokens = 10;
                r.outputTokens = 5;
                r.total = 8ms;
                r.queueWait = 3ms;
                r.compute = 5ms;
            }
            m.recordBatch(b, rs, t);
        }
        Snapshot s;
        m.fill(s, start + 1s);
        QCOMPARE(s.completed, std::uint64_t(400));
        QVERIFY(std::abs(s.requestsPerS - 400.0) < 1e-6);
        QVERIFY(std::abs(s.outputTokensPerS - 2000.0) < 1e-6);
        QCOMPARE(s.meanBatchSize, 4.0);
        QCOMPARE(s.paddingEfficiency, 40.0 / 64.0);
        QVERIFY(std::abs(s.total.p50Us - 8000.0) < 8000.0 * 0.016);
        QVERIFY(std::abs(s.busyFraction - 0.5) < 1e-9); // 100 × 5 ms in 1 s
        QCOMPARE(s.batchSizeCounts[4], std::uint64_t(100));
        QCOMPARE(s.recentBatches.size(), std::size_t(100));
        QCOMPARE(s.recentBatches.back().id, std::uint64_t(100));

        // 10 s later the window is empty, the cumulative figures remain
        m.fill(s, start + 11s);
        QCOMPARE(s.requestsPerS, 0.0);
        QCOMPARE(s.total.count, std::uint64_t(0));
        QCOMPARE(s.totalAll.count, std::uint64_t(400));
        QCOMPARE(s.paddingEfficiencyAll, 40.0 / 64.0);
    }

    void recentBatchesIsABoundedRing()
    {
        const TimePoint start = TimePoint(1000s);
        MetricsRecorder m(start);
        for (int i = 1; i <= 300; ++i) {
            BatchRecord b;
            b.id = std::uint64_t(i);
            b.size = 1;
            m.recordBatch(b, {}, start);
        }
        Snapshot s;
        m.fill(s, start);
        QCOMPARE(s.recentBatches.size(), MetricsRecorder::kRecentBatches);
        QCOMPARE(s.recentBatches.front().id, std::uint64_t(300 - MetricsRecorder::kRecentBatches + 1));
        QCOMPARE(s.recentBatches.back().id, std::uint64_t(300));
    }
};

QTEST_APPLESS_MAIN(TestMetrics)
#include "test_metrics.moc"
