// Small pure pieces of the console: the duration box's units, parsing and
// 1-2-5 steps; the charts' nice axis maxima; the chart history's ring
// buffer, config markers and batch-size distribution.
#include "ui/chart_history.h"
#include "ui/duration_spin_box.h"
#include "ui/time_chart_view.h"

#include <QLineEdit>
#include <QLineSeries>
#include <QSignalSpy>
#include <QValueAxis>
#include <QtTest>

#include <algorithm>

using namespace bp;
using namespace bp::ui;
using namespace std::chrono_literals;

namespace {
Snapshot snapshotAt(double uptimeS)
{
    Snapshot s;
    s.uptimeS = uptimeS;
    s.takenAt = TimePoint(std::chrono::seconds(1000)) + fromSeconds(uptimeS);
    ConfigChange initial;
    initial.version = 1;
    initial.summary = "initial";
    initial.at = TimePoint(std::chrono::seconds(1000));
    s.configHistory.push_back(initial);
    return s;
}
} // namespace

class TestUiUnits : public QObject {
    Q_OBJECT
private slots:
    void formatDuration_data()
    {
        QTest::addColumn<qint64>("us");
        QTest::addColumn<QString>("text");
        QTest::newRow("zero") << qint64(0) << "0 µs";
        QTest::newRow("µs") << qint64(250) << "250 µs";
        QTest::newRow("ms") << qint64(5000) << "5 ms";
        QTest::newRow("fractional ms") << qint64(1250) << "1.25 ms";
        QTest::newRow("s") << qint64(1'500'000) << "1.5 s";
        QTest::newRow("10 s") << qint64(10'000'000) << "10 s";
    }
    void formatDuration()
    {
        QFETCH(qint64, us);
        QFETCH(QString, text);
        QCOMPARE(DurationSpinBox::format(us), text);
        QCOMPARE(DurationSpinBox::parse(text, 1), std::optional<qint64>(us)); // round trip
    }

    void parseDuration_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qint64>("defaultUnit");
        QTest::addColumn<qint64>("us"); // -1 = refused
        QTest::newRow("us") << "10us" << qint64(1) << qint64(10);
        QTest::newRow("μs (Greek mu)") << "10 μs" << qint64(1) << qint64(10);
        QTest::newRow("MS upper case") << "3 MS" << qint64(1) << qint64(3000);
        QTest::newRow("bare number in ms") << "7" << qint64(1000) << qint64(7000);
        QTest::newRow("bare number in s") << "0.5" << qint64(1'000'000) << qint64(500'000);
        QTest::newRow("leading dot") << ".5 ms" << qint64(1) << qint64(500);
        QTest::newRow("spaces") << "  2   s " << qint64(1) << qint64(2'000'000);
        QTest::newRow("negative") << "-5 ms" << qint64(1) << qint64(-1);
        QTest::newRow("unknown unit") << "5 min" << qint64(1) << qint64(-1);
        QTest::newRow("not a number") << "soon" << qint64(1) << qint64(-1);
        QTest::newRow("empty") << "" << qint64(1) << qint64(-1);
    }
    void parseDuration()
    {
        QFETCH(QString, text);
        QFETCH(qint64, defaultUnit);
        QFETCH(qint64, us);
        const auto parsed = DurationSpinBox::parse(text, defaultUnit);
        QCOMPARE(parsed.value_or(-1), us);
    }

    void ladder_data()
    {
        QTest::addColumn<qint64>("from");
        QTest::addColumn<int>("steps");
        QTest::addColumn<qint64>("to");
        QTest::newRow("5 ms up") << qint64(5000) << 1 << qint64(10'000);
        QTest::newRow("5 ms down") << qint64(5000) << -1 << qint64(2000);
        QTest::newRow("two up") << qint64(1000) << 2 << qint64(5000);
        QTest::newRow("off the ladder up") << qint64(7000) << 1 << qint64(10'000);
        QTest::newRow("off the ladder down") << qint64(7000) << -1 << qint64(5000);
        QTest::newRow("zero up") << qint64(0) << 1 << qint64(1);
        QTest::newRow("1 µs down") << qint64(1) << -1 << qint64(0);
        QTest::newRow("floor") << qint64(0) << -3 << qint64(0);
    }
    void ladder()
    {
        QFETCH(qint64, from);
        QFETCH(int, steps);
        QFETCH(qint64, to);
        QCOMPARE(DurationSpinBox::ladderStep(from, steps), to);
    }

    void typingEmitsOnlyValidValues()
    {
        DurationSpinBox box;
        box.setValueUs(5000);
        QSignalSpy spy(&box, &DurationSpinBox::valueChanged);
        box.selectAll();
        QTest::keyClicks(&box, "2 m"); // "2" alone means 2 ms already (the unit shown)
        QCOMPARE(box.valueUs(), 2000);
        QTest::keyClicks(&box, "s");
        QCOMPARE(box.valueUs(), 2000);
        QCOMPARE(spy.count(), 1);
        box.selectAll();
        QTest::keyClicks(&box, "x"); // refused by the validator
        QCOMPARE(box.valueUs(), 2000);
    }

    void niceCeiling_data()
    {
        QTest::addColumn<double>("v");
        QTest::addColumn<double>("nice");
        QTest::newRow("zero") << 0.0 << 1.0;
        QTest::newRow("negative") << -3.0 << 1.0;
        QTest::newRow("exact") << 2.0 << 2.0;
        QTest::newRow("2.1") << 2.1 << 2.5;
        QTest::newRow("2.6") << 2.6 << 5.0;
        QTest::newRow("7") << 7.0 << 10.0;
        QTest::newRow("0.031") << 0.031 << 0.05;
        QTest::newRow("12000") << 12000.0 << 20000.0;
    }
    void niceCeiling()
    {
        QFETCH(double, v);
        QFETCH(double, nice);
        QVERIFY(qAbs(TimeChartView::niceCeiling(v) - nice) < 1e-12 * nice);
    }

    // A days-long session's samples (the comparison of a session
    // of millions of rows drew 346,689 points a series): a chart keeps at
    // most about kMaxPoints, with every spike and dip.
    void chartsThinLongSeries()
    {
        QList<QPointF> points;
        for (int i = 0; i < 100000; ++i)
            points.append(QPointF(i, i % 1000 == 0 ? 0.0 : 5.0 + (i % 7)));
        points[54321].setY(1000); // one spike
        const QList<QPointF> thin = TimeChartView::thinned(points, 4000);
        QVERIFY2(thin.size() <= 4002, qPrintable(QString::number(thin.size())));
        QVERIFY(thin.size() >= 2000);
        QVERIFY(std::is_sorted(thin.begin(), thin.end(), [](QPointF a, QPointF b) { return a.x() < b.x(); }));
        QVERIFY(thin.contains(QPointF(54321, 1000)));
        QCOMPARE(std::count_if(thin.begin(), thin.end(), [](QPointF p) { return p.y() == 0; }),
                 qsizetype(100));
        QCOMPARE(TimeChartView::thinned(points.mid(0, 3000), 4000), points.mid(0, 3000)); // short: unchanged

        TimeChartView chart(QStringLiteral("t"), QStringLiteral("v"));
        const int s = chart.addSeries(QStringLiteral("s"), Qt::blue);
        chart.setPoints(s, points);
        QVERIFY(chart.series(s)->count() <= TimeChartView::kMaxPoints + 2);
        chart.rescale();
        QVERIFY(chart.valueAxis(TimeChartView::Axis::Left)->max() >= 1000); // the spike sets the scale
    }

    void historyIsARingBuffer()
    {
        ChartHistory h(4);
        for (int i = 0; i < 6; ++i) {
            ChartSample s;
            s.t = i;
            h.append(s);
        }
        QCOMPARE(h.size(), std::size_t(4));
        QCOMPARE(h.at(0).t, 2.0);
        QCOMPARE(h.latest().t, 5.0);
        QCOMPARE(h.firstAtOrAfter(3.5), std::size_t(2));
        QCOMPARE(h.firstAtOrAfter(-1), std::size_t(0));
        QCOMPARE(h.firstAtOrAfter(9), std::size_t(4));
    }

    void configChangesBecomeMarkersOnce()
    {
        ChartHistory h;
        Snapshot s = snapshotAt(10);
        h.add(s, nullptr);
        QCOMPARE(h.markers().size(), std::size_t(0)); // the initial config is no marker
        ConfigChange change;
        s = snapshotAt(13);
        change.version = 2;
        change.at = s.takenAt - 2s; // 2 s before this snapshot, 1 s after the first
        change.summary = "max_batch_size 16→32";
        change.origin = "gui";
        s.configHistory.push_back(change);
        h.add(s, nullptr);
        h.add(s, nullptr); // the same history again adds nothing
        QCOMPARE(h.markers().size(), std::size_t(1));
        QCOMPARE(h.markers().front().t, 11.0);
        QCOMPARE(h.markers().front().summary, QStringLiteral("max_batch_size 16→32"));
        QCOMPARE(h.markers().front().origin, QStringLiteral("gui"));
    }

    void samplesCarryTheHostFigures()
    {
        ChartHistory h;
        app::HostSample host;
        host.processCpuPercent = 42;
        h.add(snapshotAt(1), &host);
        QCOMPARE(h.latest().cpuPercent, 42.0);
        QVERIFY(std::isnan(h.latest().gpuPercent));
        host.gpu = app::GpuSample{70, 30, 2ull << 30, 8ull << 30};
        h.add(snapshotAt(2), &host);
        QCOMPARE(h.latest().gpuPercent, 70.0);
        QCOMPARE(h.latest().memBwPercent, 30.0);
        QCOMPARE(h.latest().memUsedGiB, 2.0);
    }

    void batchSizeShareCoversTheWindow()
    {
        ChartHistory h;
        Snapshot s = snapshotAt(0);
        s.batchSizeCounts = {0, 0, 0, 0};
        h.add(s, nullptr);
        s = snapshotAt(5);
        s.batchSizeCounts = {0, 10, 0, 0}; // ten batches of 1, before the window
        h.add(s, nullptr);
        s = snapshotAt(20);
        s.batchSizeCounts = {0, 10, 0, 30, 10}; // then 30 of 3 and 10 of 4
        h.add(s, nullptr);
        const std::vector<double> share = h.batchSizeShare(10); // counts as of t = 10: those of t = 5
        QCOMPARE(share, (std::vector<double>{0, 0, 0, 75, 25}));
        QCOMPARE(h.batchSizeShare(30), (std::vector<double>{0, 20, 0, 60, 20}));
        s = snapshotAt(40); // idle for 20 s: nothing in the last 10 s
        s.batchSizeCounts = {0, 10, 0, 30, 10};
        h.add(s, nullptr);
        QVERIFY(h.batchSizeShare(10).empty());
    }

    void engineRestartClearsTheHistory()
    {
        ChartHistory h;
        h.add(snapshotAt(50), nullptr);
        h.add(snapshotAt(1), nullptr);
        QCOMPARE(h.size(), std::size_t(1));
        QCOMPARE(h.latest().t, 1.0);
    }
};

QTEST_MAIN(TestUiUnits)
#include "test_ui_units.moc"
