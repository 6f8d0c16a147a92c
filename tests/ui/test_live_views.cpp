// The live views against a real engine: snapshots reach the charts, many
// snapshots cause one coalesced redraw, a config change adds a marker with
// its summary, the utilization chart switches to NVML figures when a (fake)
// GPU library answers and says what it shows when not, and the batch
// timeline collects batches and finds the one under the cursor.
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
    std::unique_ptr<Engine> engine = test::makeEchoEngine();
    app::EngineBridge bridge{*engine};
    ChartsView charts;
    Live()
    {
        QObject::connect(&bridge, &app::EngineBridge::snapshotReady, &charts, &ChartsView::addSnapshot);
        QObject::connect(&bridge, &app::EngineBridge::hostSampleReady, &charts, &ChartsView::addHostSample);
        charts.resize(1200, 600);
        charts.show();
    }
    void submit(int n)
    {
        for (int i = 0; i < n; ++i) {
            Request r;
            r.tokens.assign(16, 1);
            QVERIFY(engine->submit(std::move(r), [](Response &&) {}).isOk());
        }
    }
};
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
};

QTEST_MAIN(TestLiveViews)
#include "test_live_views.moc"
