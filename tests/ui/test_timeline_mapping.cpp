// The batch timeline's time <-> pixel arithmetic, data-driven and without a
// view (hotspot's way): positions, round trips, clipping of spans to the
// window, minimum widths, tick steps and zoom limits.
#include "ui/timeline_mapping.h"

#include <QtTest>

using bp::ui::TimelineMapping;

class TestTimelineMapping : public QObject {
    Q_OBJECT
private slots:
    void toX_data()
    {
        QTest::addColumn<double>("end");
        QTest::addColumn<double>("span");
        QTest::addColumn<double>("left");
        QTest::addColumn<double>("width");
        QTest::addColumn<double>("t");
        QTest::addColumn<double>("x");
        QTest::newRow("left edge") << 0.0 << 1.0 << 70.0 << 500.0 << -1.0 << 70.0;
        QTest::newRow("right edge is now") << 0.0 << 1.0 << 70.0 << 500.0 << 0.0 << 570.0;
        QTest::newRow("middle") << 0.0 << 1.0 << 70.0 << 500.0 << -0.5 << 320.0;
        QTest::newRow("10 ms window, 1 ms") << 0.0 << 0.01 << 0.0 << 1000.0 << -0.009 << 100.0;
        QTest::newRow("left of the window") << 0.0 << 2.0 << 0.0 << 200.0 << -3.0 << -100.0;
        QTest::newRow("absolute times") << 105.0 << 5.0 << 10.0 << 100.0 << 101.0 << 30.0;
    }
    void toX()
    {
        QFETCH(double, end);
        QFETCH(double, span);
        QFETCH(double, left);
        QFETCH(double, width);
        QFETCH(double, t);
        QFETCH(double, x);
        const auto m = TimelineMapping::window(end, span, left, width);
        QCOMPARE(m.toX(t), x);
        QVERIFY(qAbs(m.toTime(x) - t) < 1e-12 * std::max(1.0, qAbs(t)));
    }

    void span_data()
    {
        QTest::addColumn<double>("t0");
        QTest::addColumn<double>("t1");
        QTest::addColumn<double>("minWidth");
        QTest::addColumn<bool>("visible");
        QTest::addColumn<double>("x0");
        QTest::addColumn<double>("x1");
        // window [-1, 0] over [0, 1000)
        QTest::newRow("inside") << -0.5 << -0.25 << 1.0 << true << 500.0 << 750.0;
        QTest::newRow("reversed interval") << -0.25 << -0.5 << 1.0 << true << 500.0 << 750.0;
        QTest::newRow("clipped left") << -2.0 << -0.9 << 1.0 << true << 0.0 << 100.0;
        QTest::newRow("clipped right") << -0.1 << 0.5 << 1.0 << true << 900.0 << 1000.0;
        QTest::newRow("covers all") << -5.0 << 5.0 << 1.0 << true << 0.0 << 1000.0;
        QTest::newRow("too thin gets min width") << -0.5 << -0.4999 << 2.0 << true << 500.0 << 502.0;
        QTest::newRow("wholly left") << -3.0 << -1.5 << 1.0 << false << 0.0 << 0.0;
        QTest::newRow("wholly right") << 0.2 << 0.3 << 1.0 << false << 0.0 << 0.0;
    }
    void span()
    {
        QFETCH(double, t0);
        QFETCH(double, t1);
        QFETCH(double, minWidth);
        QFETCH(bool, visible);
        QFETCH(double, x0);
        QFETCH(double, x1);
        const auto s = TimelineMapping::window(0, 1, 0, 1000).span(t0, t1, minWidth);
        QCOMPARE(s.visible, visible);
        if (visible) {
            QVERIFY2(qAbs(s.x0 - x0) < 1e-6, qPrintable(QString::number(s.x0)));
            QVERIFY2(qAbs(s.x1 - x1) < 1e-6, qPrintable(QString::number(s.x1)));
        }
    }

    void tickStep_data()
    {
        QTest::addColumn<double>("span");
        QTest::addColumn<double>("width");
        QTest::addColumn<double>("minPixels");
        QTest::addColumn<double>("step");
        QTest::newRow("1 s over 1000 px, 90 px apart") << 1.0 << 1000.0 << 90.0 << 0.1;
        QTest::newRow("1 s over 500 px") << 1.0 << 500.0 << 90.0 << 0.2;
        QTest::newRow("1 s over 200 px") << 1.0 << 200.0 << 90.0 << 0.5;
        QTest::newRow("60 s over 600 px") << 60.0 << 600.0 << 90.0 << 10.0;
        QTest::newRow("10 ms over 800 px") << 0.01 << 800.0 << 90.0 << 0.002;
        QTest::newRow("exact fit") << 1.0 << 1000.0 << 100.0 << 0.1;
    }
    void tickStep()
    {
        QFETCH(double, span);
        QFETCH(double, width);
        QFETCH(double, minPixels);
        QFETCH(double, step);
        const auto m = TimelineMapping::window(0, span, 0, width);
        QCOMPARE(m.tickStep(minPixels), step);
        QVERIFY(step / m.secondsPerPixel() >= minPixels * (1 - 1e-9));
    }

    void firstTick_data()
    {
        QTest::addColumn<double>("start");
        QTest::addColumn<double>("step");
        QTest::addColumn<double>("first");
        QTest::newRow("on a tick") << -1.0 << 0.2 << -1.0;
        QTest::newRow("between ticks") << -0.95 << 0.2 << -0.8;
        QTest::newRow("positive") << 10.3 << 5.0 << 15.0;
    }
    void firstTick()
    {
        QFETCH(double, start);
        QFETCH(double, step);
        QFETCH(double, first);
        TimelineMapping m{start, start + 10, 0, 100};
        QVERIFY(qAbs(m.firstTick(step) - first) < 1e-9);
    }

    void zoomKeepsTheRightEdgeAndLimits_data()
    {
        QTest::addColumn<double>("factor");
        QTest::addColumn<double>("span");
        QTest::newRow("out") << 2.0 << 2.0;
        QTest::newRow("in") << 0.5 << 0.5;
        QTest::newRow("clamped out") << 1000.0 << 60.0;
        QTest::newRow("clamped in") << 1e-6 << 0.01;
    }
    void zoomKeepsTheRightEdgeAndLimits()
    {
        QFETCH(double, factor);
        QFETCH(double, span);
        const auto m = TimelineMapping::window(0, 1, 70, 500).zoomed(factor, 0.01, 60);
        QCOMPARE(m.endS, 0.0);
        QVERIFY(qAbs((m.endS - m.startS) - span) < 1e-12);
        QCOMPARE(m.left, 70.0);
        QCOMPARE(m.width, 500.0);
    }

    void zeroWidthIsSafe()
    {
        const auto m = TimelineMapping::window(0, 1, 0, 0);
        QCOMPARE(m.width, 1.0);
        QVERIFY(std::isfinite(m.toX(-0.5)));
    }
};

QTEST_GUILESS_MAIN(TestTimelineMapping)
#include "test_timeline_mapping.moc"
