// The live views against a real engine: snapshots reach the charts, many
// snapshots cause one coalesced redraw, a config change adds a marker with
// its summary, the utilization chart switches to NVML figures when a (fake)
// GPU library answers and says what it shows when not, and the batch
// timeline collects batches and finds the one under the cursor. For
// generation: the TTFT/TPOT and sequences/KV charts appear
// only when something generates, follow the snapshots' figures with the
// goodput SLOs as levels, fill from a real `continuous` engine, and the
// timeline draws each step split into decode and prefill tokens with its
// joins marked.
#include "gui_test_support.h"

#include "ui/batch_timeline.h"
#include "ui/charts_view.h"
#include "ui/time_chart_view.h"

#include <QChart>
#include <QLineSeries>
#include <QSignalSpy>
#include <QValueAxis>

using namespace bp;
using namespace bp::ui;
using namespace std::chrono_literals;

namespace {
struct Live {
    std::unique_ptr<Engine> engine;
    app::EngineBridge bridge;
    ChartsView charts;
    explicit Live(BatchingConfig config = {})
        : engine(test::makeEchoEngine(std::move(config))), bridge(*engine)
    {
        QObject::connect(&bridge, &app::EngineBridge::snapshotReady, &charts, &ChartsView::addSnapshot);
        QObject::connect(&bridge, &app::EngineBridge::hostSampleReady, &charts, &ChartsView::addHostSample);
        charts.resize(1200, 600);
        charts.show();
    }
    void submit(int n, int maxNewTokens = 0)
    {
        for (int i = 0; i < n; ++i) {
            Request r;
            r.tokens.assign(16, 1);
            r.maxNewTokens = maxNewTokens;
            QVERIFY(engine->submit(std::move(r), [](Response &&) {}).isOk());
        }
    }
};
// The series of the generation charts (ChartsView's order).
enum { TtftP50, TtftP99, TpotP50, TpotP99, TtftSlo, TpotSlo };
enum { Running, Waiting, Kv };
constexpr int kGoodput = 3; // on the throughput chart

QPointF lastPoint(TimeChartView *chart, int series)
{
    QLineSeries *line = chart->series(series);
    return line->count() ? line->at(line->count() - 1) : QPointF(-1, -1);
}

// A snapshot of a generating engine at `t` seconds: TTFT p50/p99 80/300 ms,
// TPOT p50/p99 12/40 ms, 7.5 good requests/s, 6 running, 3 waiting, KV 40%.
app::SnapshotPtr generationSnapshot(double t, BatchingConfig config)
{
    auto s = std::make_shared<Snapshot>();
    s->uptimeS = t;
    s->takenAt = TimePoint(std::chrono::milliseconds(std::int64_t(t * 1000)));
    s->config = std::move(config);
    s->timeToFirstToken = {.count = 20, .p50Us = 80'000, .p99Us = 300'000};
    s->timeToFirstTokenAll = s->timeToFirstToken;
    s->timePerOutputToken = {.count = 20, .p50Us = 12'000, .p99Us = 40'000};
    s->goodputPerS = 7.5;
    s->requestsPerS = 10;
    s->runningSequences = 6;
    s->waitingSequences = 3;
    s->kvTokens = 400;
    s->kvCapacityTokens = 1000;
    s->kvUsageRatio = 0.4;
    return s;
}

QColor pixel(const QImage &image, QPointF at)
{
    return image.pixelColor(at.toPoint());
}
} // namespace

class TestLiveViews : public QObject {
    Q_OBJECT
private slots:
    void initTestCase() { test::isolateSettings(); }

    void snapshotsReachTheCharts()
    {
        Live live;
        live.submit(50);
        QTRY_VERIFY(live.charts.history().size() >= 3);
        QTRY_VERIFY(live.charts.redraws() >= 1);
        TimeChartView *throughput = live.charts.timeCharts()[1];
        QTRY_VERIFY(throughput->series(0)->count() >= 3);
        // Time runs to "now" at 0 on the right.
        QCOMPARE(throughput->series(0)->at(throughput->series(0)->count() - 1).x(), 0.0);
        QCOMPARE(throughput->timeAxis()->max(), 0.0);
    }

    void redrawsAreCoalesced()
    {
        auto engine = test::makeEchoEngine();
        ChartsView charts; // fed by hand only
        charts.show();
        QSignalSpy redrawn(&charts, &ChartsView::redrawn);
        const Snapshot snapshot = engine->snapshot();
        for (int i = 0; i < 50; ++i) {
            auto s = std::make_shared<Snapshot>(snapshot);
            s->uptimeS += i * 0.1;
            charts.addSnapshot(s);
        }
        QCOMPARE(redrawn.count(), 0); // nothing drawn while snapshots arrive
        QTRY_VERIFY(redrawn.count() >= 1);
        QCOMPARE(redrawn.count(), 1); // fifty snapshots, one redraw
        QCOMPARE(charts.history().size(), std::size_t(50));
    }

    void configChangeAddsAMarker()
    {
        Live live;
        QTRY_VERIFY(live.charts.history().size() >= 1);
        QCOMPARE(live.charts.markerCount(), std::size_t(0));
        BatchingConfig c = live.engine->config();
        c.maxBatchSize = 32;
        QVERIFY(live.bridge.applyConfig(c, "gui"));
        QTRY_COMPARE(live.charts.markerCount(), std::size_t(1));
        QCOMPARE(live.charts.history().markers().back().summary, QStringLiteral("max_batch_size 16→32"));
        // Every time chart draws it, with its summary as the caption.
        for (TimeChartView *chart : live.charts.timeCharts()) {
            QTRY_COMPARE(chart->markers().size(), std::size_t(1));
            QCOMPARE(chart->markers().front().caption, QStringLiteral("max_batch_size 16→32"));
            QVERIFY(chart->markers().front().x <= 0 && chart->markers().front().x > -live.charts.window());
        }
        c.maxQueueDelay = 1ms;
        QVERIFY(live.bridge.applyConfig(c, "rest"));
        QTRY_COMPARE(live.charts.markerCount(), std::size_t(2));
        QCOMPARE(live.charts.history().markers().back().origin, QStringLiteral("rest"));
    }

    void utilizationFromNvmlWhenAGpuAnswers()
    {
        Live live;
        live.bridge.startHostSampling(QStringLiteral(FAKE_NVML_PATH), 0);
        QTRY_VERIFY(live.charts.showsGpu());
        TimeChartView *util = live.charts.timeCharts()[2];
        QVERIFY2(util->chart()->title().contains("Fake GPU 0"), qPrintable(util->chart()->title()));
        QTRY_VERIFY(!std::isnan(live.charts.history().latest().gpuPercent));
    }

    void utilizationSaysWhatItShowsWithoutAGpu()
    {
        Live live;
        live.bridge.startHostSampling(QStringLiteral("/nonexistent/libnvidia-ml.so.1"), 0);
        QTRY_VERIFY(!live.charts.history().empty() && !std::isnan(live.charts.history().latest().cpuPercent));
        QVERIFY(!live.charts.showsGpu());
        TimeChartView *util = live.charts.timeCharts()[2];
        QVERIFY(util->chart()->title().contains("no NVIDIA GPU"));
        QVERIFY(util->series(0)->name().contains("engine busy"));
        QVERIFY(util->series(1)->name().contains("process CPU"));
        QVERIFY(util->series(1)->isVisible());
        QVERIFY(!util->series(2)->isVisible()); // GPU compute
    }

    void windowChangesTheTimeAxis()
    {
        Live live;
        live.charts.setWindow(30);
        for (TimeChartView *chart : live.charts.timeCharts())
            QCOMPARE(chart->timeAxis()->min(), -30.0);
        live.charts.setWindow(1e9); // clamped to the history kept
        QCOMPARE(live.charts.window(), ChartsView::kHistoryS);
    }

    void timelineCollectsBatches()
    {
        Live live;
        BatchTimeline timeline;
        QObject::connect(&live.bridge, &app::EngineBridge::snapshotReady, &timeline,
                         &BatchTimeline::addSnapshot);
        timeline.resize(800, 200);
        timeline.show();
        live.submit(200);
        QTRY_VERIFY(timeline.batchCount() >= 1);
        const std::uint64_t first = timeline.batches().front().id;
        for (std::size_t i = 1; i < timeline.batches().size(); ++i)
            QVERIFY(timeline.batches()[i].id >
                    timeline.batches()[i - 1].id); // no duplicates across snapshots
        QVERIFY(first >= 1);
        QVERIFY(!timeline.grab().isNull()); // paints
    }

    void timelineFindsTheBatchUnderTheCursor()
    {
        BatchTimeline timeline;
        timeline.resize(874, 200); // 800 px of lanes
        auto s = std::make_shared<Snapshot>();
        s->takenAt = TimePoint(std::chrono::seconds(5000));
        s->config.instances = 2;
        BatchRecord b;
        b.id = 1;
        b.executor = 1;
        b.size = 16;
        b.paddedLength = 64;
        b.startedAt = s->takenAt - 800ms; // runs from -0.8 s to -0.3 s
        b.dispatchedAt = b.startedAt;
        b.compute = 500ms;
        s->recentBatches.push_back(b);
        timeline.addSnapshot(s);
        timeline.setPaused(true); // freeze "now"
        timeline.setSpan(1);
        const int laneLeft = 74, width = 874 - 74 - 6;
        const int xMid = laneLeft + int(width * (1 - 0.55)); // t = -0.55 s
        const QFontMetrics fm(timeline.font());
        const int top = fm.height() + 8, lanes = 200 - top - 18;
        const QPoint inLane1(xMid, top + lanes * 3 / 4);
        const QPoint inLane0(xMid, top + lanes / 4);
        QVERIFY(timeline.batchAt(inLane1) != nullptr);
        QCOMPARE(timeline.batchAt(inLane1)->id, std::uint64_t(1));
        QVERIFY(timeline.batchAt(inLane0) == nullptr);
        QVERIFY(timeline.batchAt(QPoint(laneLeft + width - 5, top + lanes * 3 / 4)) ==
                nullptr); // after it ended
    }

    void generationChartsStayHiddenForAnEncoder()
    {
        Live live; // echo, nothing generated
        live.submit(50);
        QTRY_VERIFY(live.charts.redraws() >= 2);
        QVERIFY(!live.charts.showsGeneration());
        QVERIFY(live.charts.tokenChart()->isHidden());
        QVERIFY(live.charts.sequenceChart()->isHidden());
        QVERIFY(!live.charts.throughputChart()->series(kGoodput)->isVisible());
        live.charts.setGenerative(true); // the console does this for a decoder
        QVERIFY(!live.charts.tokenChart()->isHidden());
        QVERIFY(!live.charts.sequenceChart()->isHidden());
    }

    void generationSeriesFollowTheSnapshots()
    {
        ChartsView charts;
        charts.resize(1200, 800);
        charts.show();
        BatchingConfig c;
        c.policy = PolicyKind::Continuous;
        c.goodput.ttft = 500ms; // TPOT and e2e not set
        QSignalSpy redrawn(&charts, &ChartsView::redrawn);
        for (int i = 0; i < 5; ++i)
            charts.addSnapshot(generationSnapshot(100 + 0.1 * i, c));
        QTRY_VERIFY(redrawn.count() >= 1);
        QVERIFY(charts.showsGeneration()); // by itself: the snapshots generate
        TimeChartView *tokens = charts.tokenChart();
        QCOMPARE(tokens->series(TtftP50)->count(), 5);
        QCOMPARE(lastPoint(tokens, TtftP50), QPointF(0, 80));
        QCOMPARE(lastPoint(tokens, TtftP99), QPointF(0, 300));
        QCOMPARE(lastPoint(tokens, TpotP50), QPointF(0, 12));
        QCOMPARE(lastPoint(tokens, TpotP99), QPointF(0, 40));
        // The TTFT SLO is a level across the window; the unset TPOT one is not drawn.
        QVERIFY(tokens->series(TtftSlo)->isVisible());
        QCOMPARE(tokens->series(TtftSlo)->count(), 2);
        QCOMPARE(tokens->series(TtftSlo)->at(0).y(), 500.0);
        QCOMPARE(tokens->series(TtftSlo)->at(0).x(), -charts.window());
        QVERIFY(!tokens->series(TpotSlo)->isVisible());
        QVERIFY(tokens->valueAxis(TimeChartView::Axis::Left)->max() >= 500); // the SLO stays in view
        // Goodput beside requests/s, named with its SLOs.
        QLineSeries *goodput = charts.throughputChart()->series(kGoodput);
        QVERIFY(goodput->isVisible());
        QCOMPARE(goodput->at(goodput->count() - 1).y(), 7.5);
        const QString title = charts.throughputChart()->chart()->title();
        QCOMPARE(title, QStringLiteral("Throughput and goodput"));
        QCOMPARE(tokens->valueAxis(TimeChartView::Axis::Left)->titleText(),
                 QStringLiteral("TTFT ms (SLO 500)"));
        QCOMPARE(tokens->valueAxis(TimeChartView::Axis::Right)->titleText(), QStringLiteral("TPOT ms"));
        TimeChartView *seqs = charts.sequenceChart();
        QCOMPARE(lastPoint(seqs, Running).y(), 6.0);
        QCOMPARE(lastPoint(seqs, Waiting).y(), 3.0);
        QCOMPARE(lastPoint(seqs, Kv).y(), 40.0); // percent of the KV budget
        QCOMPARE(seqs->valueAxis(TimeChartView::Axis::Right)->max(), 100.0);

        // No KV budget: the KV series shows tokens on a free axis; no SLO: no goodput.
        c.goodput = {};
        auto unbounded = std::const_pointer_cast<Snapshot>(generationSnapshot(101, c));
        unbounded->kvCapacityTokens = 0;
        unbounded->kvUsageRatio = 0;
        unbounded->kvTokens = 1234;
        charts.addSnapshot(unbounded);
        QTRY_VERIFY(!charts.throughputChart()->series(kGoodput)->isVisible());
        QCOMPARE(charts.throughputChart()->chart()->title(), QStringLiteral("Throughput"));
        QCOMPARE(tokens->valueAxis(TimeChartView::Axis::Left)->titleText(), QStringLiteral("TTFT ms"));
        QCOMPARE(lastPoint(seqs, Kv).y(), 1234.0);
        QCOMPARE(seqs->valueAxis(TimeChartView::Axis::Right)->max(), 2000.0);
        QVERIFY(!tokens->series(TtftSlo)->isVisible());
    }

    void continuousRunFillsTheGenerationCharts()
    {
        BatchingConfig c;
        c.policy = PolicyKind::Continuous;
        c.goodput.e2e = 10s;
        Live live(c);
        BatchTimeline timeline;
        QObject::connect(&live.bridge, &app::EngineBridge::snapshotReady, &timeline,
                         &BatchTimeline::addSnapshot);
        timeline.resize(800, 200);
        timeline.show();
        live.submit(40, 8);
        QTRY_VERIFY(live.charts.showsGeneration());
        QTRY_VERIFY(live.charts.tokenChart()->series(TtftP99)->count() >= 1);
        QTRY_VERIFY(live.charts.tokenChart()->series(TpotP99)->count() >= 1);
        QTRY_VERIFY(live.charts.sequenceChart()->series(Running)->count() >= 1);
        QTRY_VERIFY(live.charts.throughputChart()->series(kGoodput)->count() >= 1);
        // Every request generated: TTFT measured, and steps on the timeline.
        QTRY_VERIFY(timeline.batchCount() >= 8);
        QVERIFY(timeline.showsSteps());
        int prefill = 0, decode = 0, joined = 0;
        for (const BatchRecord &b : timeline.batches()) {
            QVERIFY(BatchTimeline::isStep(b));
            prefill += b.prefillTokens;
            decode += b.decodeTokens;
            joined += b.joined;
        }
        QVERIFY(prefill > 0 && decode > 0 && joined > 0);
        QVERIFY(!timeline.grab().isNull());
    }

    void stepBarStacksDecodeUnderPrefill_data()
    {
        QTest::addColumn<int>("prefill");
        QTest::addColumn<int>("decode");
        QTest::addColumn<int>("full"); // tokens of a full-height bar
        QTest::addColumn<double>("decodeHeight");
        QTest::addColumn<double>("prefillHeight");
        // Slot 100 px tall: the step is as tall as its share of `full`.
        QTest::newRow("quarter") << 96 << 32 << 512 << 6.25 << 18.75;
        QTest::newRow("decode only") << 0 << 8 << 16 << 50.0 << 0.0;
        QTest::newRow("prefill only") << 64 << 0 << 64 << 0.0 << 100.0;
        QTest::newRow("over full: clamped") << 300 << 100 << 200 << 25.0 << 75.0;
        QTest::newRow("tiny: 3 px at least") << 0 << 1 << 1000 << 3.0 << 0.0;
    }

    void stepBarStacksDecodeUnderPrefill()
    {
        QFETCH(int, prefill);
        QFETCH(int, decode);
        QFETCH(int, full);
        QFETCH(double, decodeHeight);
        QFETCH(double, prefillHeight);
        BatchRecord b;
        b.policy = PolicyKind::Continuous;
        b.prefillTokens = prefill;
        b.decodeTokens = decode;
        const QRectF slot(10, 20, 50, 100);
        const BatchTimeline::StepBar bar = BatchTimeline::stepBar(b, slot, full);
        QCOMPARE(bar.decode.height(), decodeHeight);
        QCOMPARE(bar.prefill.height(), prefillHeight);
        QCOMPARE(bar.decode.bottom(), slot.bottom());     // decode at the bottom
        QCOMPARE(bar.prefill.bottom(), bar.decode.top()); // prefill on top of it
        QCOMPARE(bar.decode.left(), slot.left());
        QCOMPARE(bar.prefill.width(), slot.width());
    }

    void timelineDrawsStepsWithTheirJoins()
    {
        BatchTimeline timeline;
        timeline.resize(874, 200); // 800 px of lanes over 1 s: 0.8 px/ms
        auto s = std::make_shared<Snapshot>();
        s->takenAt = TimePoint(std::chrono::seconds(5000));
        s->config.policy = PolicyKind::Continuous;
        s->config.continuous.maxNumBatchedTokens = 512; // bars scale to the largest step in view (100)
        auto step = [&](std::uint64_t id, Duration startAgo, int prefill, int decode, int joined) {
            BatchRecord b;
            b.id = id;
            b.policy = PolicyKind::Continuous;
            b.startedAt = b.dispatchedAt = s->takenAt - startAgo;
            b.compute = 200ms;
            b.prefillTokens = prefill;
            b.decodeTokens = decode;
            b.size = decode + (prefill > 0 ? 1 : 0);
            b.joined = joined;
            s->recentBatches.push_back(b);
        };
        step(1, 900ms, 60, 40, 1); // -0.9 s .. -0.7 s: a join, prefill over decode
        step(2, 500ms, 0, 50, 0);  // -0.5 s .. -0.3 s: decode only, no join
        timeline.addSnapshot(s);
        timeline.setPaused(true);
        timeline.setSpan(1);
        QVERIFY(timeline.showsSteps());
        const QImage image = timeline.grab().toImage();
        const int laneLeft = 74, width = 874 - 74 - 6;
        const QFontMetrics fm(timeline.font());
        const double top = fm.height() + 8, lanes = 200 - top - 18;
        const double slotTop = top + 2, slotH = lanes - 4, slotBottom = slotTop + slotH;
        auto x = [&](double t) { return laneLeft + width * (1 + t); };
        // Step 1: the largest in view (full height), 40% decode at the bottom.
        QCOMPARE(pixel(image, {x(-0.8), slotBottom - 0.2 * slotH}), BatchTimeline::kDecodeColor);
        QCOMPARE(pixel(image, {x(-0.8), slotBottom - 0.7 * slotH}), BatchTimeline::kPrefillColor);
        // Its join: the cap on top (the bar fills the slot, so the cap sits at the slot's top).
        QCOMPARE(pixel(image, {x(-0.8), slotTop + 2}), BatchTimeline::kJoinColor);
        // Step 2: half its tokens, decode only; no cap above it.
        QCOMPARE(pixel(image, {x(-0.4), slotBottom - 0.25 * slotH}), BatchTimeline::kDecodeColor);
        QVERIFY(pixel(image, {x(-0.4), slotBottom - 0.5 * slotH - 3}) != BatchTimeline::kJoinColor);
        QVERIFY(pixel(image, {x(-0.4), slotBottom - 0.75 * slotH}) != BatchTimeline::kDecodeColor);
    }
};

QTEST_MAIN(TestLiveViews)
#include "test_live_views.moc"
