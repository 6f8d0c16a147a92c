// Metrics against known distributions: histogram quantiles within the
// documented 1.6% error, windowed rates on a fake clock, padding efficiency;
// token-level figures (TPOT, ITL, goodput against the goodput SLO) and the
// step counters of policy `continuous`.
#include "engine/metrics/metrics.h"
#include "engine/sched/outcome.h"

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

    // clear() zeroes only the buckets between the smallest and largest
    // value recorded: none of them may survive it, at either end.
    void clearForgetsEverythingRecorded()
    {
        LatencyHistogram h;
        for (std::int64_t v : {std::int64_t(-5), std::int64_t(0), std::int64_t(63), std::int64_t(64),
                               std::int64_t(1'000'000), std::int64_t(1) << 45})
            h.record(v, 3);
        h.clear();
        QCOMPARE(h.count(), std::uint64_t(0));
        QCOMPARE(h.quantile(0.99), std::int64_t(0));
        QCOMPARE(h.countAtOrBelow(std::int64_t(1) << 50), std::uint64_t(0));
        h.record(5000);
        QCOMPARE(h.count(), std::uint64_t(1));
        QCOMPARE(h.countAtOrBelow(std::int64_t(1) << 50), std::uint64_t(1));
        QCOMPARE(h.min(), std::int64_t(5000));
        QCOMPARE(h.max(), std::int64_t(5000));
        QCOMPARE(h.quantile(0.0), std::int64_t(5000));
        QCOMPARE(h.quantile(1.0), std::int64_t(5000));
    }

    // A window slot reused 2 s later holds only the new records.
    void aReusedWindowSlotStartsEmpty()
    {
        const TimePoint start = TimePoint(1000s);
        MetricsRecorder m(start);
        auto batchAt = [&m](TimePoint t, Duration total) {
            BatchRecord b;
            b.id = 1;
            b.size = 1;
            std::vector<RequestRecord> rs(1);
            rs[0].total = total;
            rs[0].compute = total;
            m.recordBatch(b, rs, t);
        };
        batchAt(start + 100ms, 900ms); // slot 0
        batchAt(start + 2100ms, 2ms);  // slot 0 again, the window later
        Snapshot s;
        m.fill(s, start + 2200ms);
        QCOMPARE(s.total.count, std::uint64_t(1));
        QVERIFY2(s.total.maxUs < 2100, qPrintable(QString::number(s.total.maxUs)));
        QVERIFY(s.total.p99Us < 2100);
        QCOMPARE(s.totalAll.count, std::uint64_t(2));
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

    void requestLevelGapsAreTheMeanGap()
    {
        Timing t;
        t.timePerOutputToken = 3ms;
        QCOMPARE(interTokenGaps(t, 4), (std::vector<Duration>{3ms, 3ms, 3ms}));
        QVERIFY(interTokenGaps(t, 1).empty());
        t.interTokenLatencies = {1ms, 5ms, 3ms}; // measured (continuous): kept as they are
        QCOMPARE(interTokenGaps(t, 4), (std::vector<Duration>{1ms, 5ms, 3ms}));
        t.timePerOutputToken = {};
        t.interTokenLatencies.clear();
        QVERIFY(interTokenGaps(t, 4).empty()); // no token times known
    }

    void tpotItlAndGoodputArithmetic()
    {
        const TimePoint start = TimePoint(1000s);
        MetricsRecorder m(start);
        GoodputConfig slo;
        slo.ttft = 10ms;
        slo.tpot = 2ms;
        slo.e2e = 100ms;
        m.setGoodputSlo(slo);
        auto gen = [](Duration ttft, std::vector<Duration> gaps, Duration total,
                      StatusCode code = StatusCode::Ok) {
            RequestRecord r;
            r.status = code;
            r.total = total;
            r.timeToFirstToken = ttft;
            r.outputTokens = int(gaps.size()) + 1;
            Duration sum{};
            for (Duration g : gaps)
                sum += g;
            if (!gaps.empty())
                r.timePerOutputToken = sum / std::int64_t(gaps.size());
            r.interTokenLatencies = std::move(gaps);
            return r;
        };
        std::vector<RequestRecord> rs;
        rs.push_back(gen(5ms, {1ms, 1ms, 4ms}, 50ms));             // good: TPOT 2 ms, one slow gap
        rs.push_back(gen(20ms, {1ms}, 50ms));                      // TTFT over
        rs.push_back(gen(5ms, {3ms, 3ms}, 50ms));                  // TPOT over
        rs.push_back(gen(5ms, {1ms}, 200ms));                      // e2e over
        rs.push_back(gen(5ms, {}, 20ms));                          // good: one token, TPOT meets
        rs.push_back(gen(5ms, {1ms}, 20ms, StatusCode::Internal)); // failed: never good, no figures
        RequestRecord encoder;                                     // no tokens: a set TTFT bound is not met
        encoder.total = 1ms;
        rs.push_back(encoder);
        BatchRecord b;
        b.size = int(rs.size());
        m.recordBatch(b, rs, start + 500ms);

        Snapshot s;
        m.fill(s, start + 1s);
        QCOMPARE(s.goodCompleted, std::uint64_t(2));
        QVERIFY(std::abs(s.goodputPerS - 2.0) < 1e-9); // 2 good in a 1 s window
        QCOMPARE(s.completed, std::uint64_t(6));
        // TPOT: the four OK requests with 2+ tokens
        QCOMPARE(s.timePerOutputTokenAll.count, std::uint64_t(4));
        QCOMPARE(s.timePerOutputToken.count, std::uint64_t(4));
        QCOMPARE(s.tpotHist.count(), std::uint64_t(4));
        // ITL: every gap of the OK requests: 3 + 1 + 2 + 1
        QCOMPARE(s.interTokenLatencyAll.count, std::uint64_t(7));
        QCOMPARE(s.itlHist.count(), std::uint64_t(7));
        QCOMPARE(s.interTokenLatencyAll.maxUs, 4000.0);
        QVERIFY(std::abs(s.interTokenLatency.p50Us - 1000.0) < 1000.0 * 0.016);
        QCOMPARE(s.itlHist.countAtOrBelow(std::int64_t(1'050'000)), std::uint64_t(4)); // 1 ms within a bucket
        // TTFT: the five OK requests that generated
        QCOMPARE(s.ttftHist.count(), std::uint64_t(5));
        QCOMPARE(s.timeToFirstTokenAll.maxUs, 20000.0);

        // A looser SLO judges later requests only; no SLO: every OK one is good.
        m.setGoodputSlo({});
        std::vector<RequestRecord> more{gen(20ms, {3ms}, 200ms), encoder};
        m.recordBatch(b, more, start + 1500ms);
        m.fill(s, start + 2s);
        QCOMPARE(s.goodCompleted, std::uint64_t(4));
        // the window (7 full slots = 1.75 s at a slot edge) holds all four
        QVERIFY(std::abs(s.goodputPerS - 4 / 1.75) < 1e-9);
        m.fill(s, start + 10s);
        QCOMPARE(s.goodputPerS, 0.0);
        QCOMPARE(s.timePerOutputToken.count, std::uint64_t(0));
        QCOMPARE(s.timePerOutputTokenAll.count, std::uint64_t(5));
    }

    void goodputSloMet_data()
    {
        QTest::addColumn<int>("ttftMs");
        QTest::addColumn<int>("tpotMs");
        QTest::addColumn<int>("e2eMs");
        QTest::addColumn<bool>("good");
        // SLO: ttft 10 ms, tpot 2 ms, e2e 100 ms; bounds are inclusive
        QTest::newRow("all within") << 10 << 2 << 100 << true;
        QTest::newRow("ttft over") << 11 << 2 << 100 << false;
        QTest::newRow("no first token") << 0 << 0 << 50 << false;
        QTest::newRow("one token (tpot 0)") << 5 << 0 << 50 << true;
        QTest::newRow("tpot over") << 5 << 3 << 50 << false;
        QTest::newRow("e2e over") << 5 << 1 << 101 << false;
    }
    void goodputSloMet()
    {
        QFETCH(int, ttftMs);
        QFETCH(int, tpotMs);
        QFETCH(int, e2eMs);
        QFETCH(bool, good);
        const GoodputConfig slo{10ms, 2ms, 100ms};
        const auto ms = [](int v) { return Duration(std::chrono::milliseconds(v)); };
        QCOMPARE(slo.met(ms(ttftMs), ms(tpotMs), ms(e2eMs)), good);
        QVERIFY(GoodputConfig{}.met(ms(ttftMs), ms(tpotMs), ms(e2eMs))); // nothing set: all good
        const GoodputConfig e2eOnly{{}, {}, 100ms};
        QCOMPARE(e2eOnly.met(ms(ttftMs), ms(tpotMs), ms(e2eMs)), e2eMs <= 100);
    }

    void stepCountersAndTokensPerStep()
    {
        const TimePoint start = TimePoint(1000s);
        MetricsRecorder m(start);
        auto step = [](int prefill, int decode, int preempted) {
            BatchRecord b;
            b.policy = PolicyKind::Continuous;
            b.size = 1;
            b.prefillTokens = prefill;
            b.decodeTokens = decode;
            b.preempted = preempted;
            return b;
        };
        m.recordBatch(step(16, 0, 0), {}, start + 100ms);
        m.recordBatch(step(0, 4, 1), {}, start + 200ms);
        m.recordBatch(step(8, 3, 2), {}, start + 5s); // alone in the later window
        BatchRecord requestBatch;                     // a request-level batch is no step
        requestBatch.size = 4;
        requestBatch.realTokens = 100;
        m.recordBatch(requestBatch, {}, start + 5s);
        Snapshot s;
        m.fill(s, start + 1s);
        QCOMPARE(s.tokensPerStep, 10.0); // (16 + 4) / 2
        m.fill(s, start + 5s + 100ms);
        QCOMPARE(s.tokensPerStep, 11.0);
        QCOMPARE(s.steps, std::uint64_t(3));
        QCOMPARE(s.stepTokens, std::uint64_t(31));
        QCOMPARE(s.preemptions, std::uint64_t(3));
        QCOMPARE(s.batches, std::uint64_t(4));
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
