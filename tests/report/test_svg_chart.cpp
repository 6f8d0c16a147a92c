// The chart arithmetic (nice axis ranges, value -> pixel) data-driven, and
// the SVG writer's cases: gaps, lone points, clamping, many markers, no data.
#include "app/report/axis_scale.h"
#include "app/report/svg_chart.h"

#include <QXmlStreamReader>
#include <QtTest>

#include <cmath>

using namespace bp::report;

namespace {

bool wellFormed(const QString &svg)
{
    QXmlStreamReader xml(svg);
    while (!xml.atEnd())
        xml.readNext();
    return !xml.hasError();
}

LineChart twoSeries()
{
    LineChart c{QStringLiteral("Latency"), QStringLiteral("ms")};
    c.x = {1, 2, 3, 4, 5};
    c.series = {{QStringLiteral("p50"), QStringLiteral("#1f77b4"), {1, 2, std::nan(""), 4, 5}},
                {QStringLiteral("p99"), QStringLiteral("#d62728"), {std::nan(""), 9, std::nan(""), std::nan(""), 12}}};
    return c;
}

} // namespace

class TestSvgChart : public QObject {
    Q_OBJECT
private slots:
    void niceRange_data()
    {
        QTest::addColumn<double>("min");
        QTest::addColumn<double>("max");
        QTest::addColumn<int>("ticks");
        QTest::addColumn<double>("lo");
        QTest::addColumn<double>("hi");
        QTest::addColumn<double>("step");
        QTest::newRow("0..10") << 0.0 << 10.0 << 5 << 0.0 << 10.0 << 2.0;
        QTest::newRow("0..9.3") << 0.0 << 9.3 << 5 << 0.0 << 10.0 << 2.0;
        QTest::newRow("0..1") << 0.0 << 1.0 << 5 << 0.0 << 1.0 << 0.2;
        QTest::newRow("0..57 s, 8 ticks") << 0.0 << 57.0 << 8 << 0.0 << 60.0 << 10.0;
        QTest::newRow("0..0.012") << 0.0 << 0.012 << 5 << 0.0 << 0.0125 << 0.0025;
        QTest::newRow("3..1740") << 3.0 << 1740.0 << 5 << 0.0 << 2000.0 << 500.0;
        QTest::newRow("-5..5") << -5.0 << 5.0 << 5 << -6.0 << 6.0 << 2.0;
        QTest::newRow("flat 0") << 0.0 << 0.0 << 5 << 0.0 << 1.0 << 0.2;
        QTest::newRow("flat 8") << 8.0 << 8.0 << 5 << 4.0 << 12.0 << 2.0;
        QTest::newRow("0..100 %") << 0.0 << 100.0 << 5 << 0.0 << 100.0 << 20.0;
        QTest::newRow("NaN") << std::nan("") << 1.0 << 5 << 0.0 << 1.0 << 0.2;
    }
    void niceRange()
    {
        QFETCH(double, min);
        QFETCH(double, max);
        QFETCH(int, ticks);
        const AxisScale s = AxisScale::nice(min, max, ticks);
        QFETCH(double, lo);
        QFETCH(double, hi);
        QFETCH(double, step);
        QVERIFY2(std::abs(s.lo - lo) < 1e-12 && std::abs(s.hi - hi) < 1e-12 && std::abs(s.step - step) < 1e-12,
                 qPrintable(QStringLiteral("got [%1, %2] step %3").arg(s.lo).arg(s.hi).arg(s.step)));
        if (std::isfinite(min) && std::isfinite(max))
            QVERIFY(s.lo <= min && s.hi >= max);
    }

    void ticksAndMapping()
    {
        const AxisScale s = AxisScale::nice(0, 0.3, 3);
        const auto t = s.ticks();
        QCOMPARE(t.size(), std::size_t(4));
        QCOMPARE(t[3], 0.3); // not 0.30000000000000004
        QCOMPARE(s.decimals(), 1);
        QCOMPARE(AxisScale::nice(0, 0.012).decimals(), 4);
        QCOMPARE(AxisScale::nice(0, 57, 8).decimals(), 0);
        // y axis: lo at the bottom pixel, hi at the top
        const AxisScale y{0, 100, 20};
        QCOMPARE(y.map(0, 230, 40), 230.0);
        QCOMPARE(y.map(100, 230, 40), 40.0);
        QCOMPARE(y.map(50, 230, 40), 135.0);
    }

    void gapsAndLonePoints()
    {
        const QString svg = renderSvgChart(twoSeries());
        QVERIFY(wellFormed(svg));
        // p50 is split by its gap into two runs: two "M"s in one path
        const int p50 = svg.indexOf("stroke=\"#1f77b4\" stroke-width=\"1.8\"");
        QVERIFY(p50 > 0);
        const QString path = svg.mid(svg.lastIndexOf("<path", p50), p50 - svg.lastIndexOf("<path", p50));
        QCOMPARE(path.count("M"), 2);
        // p99's isolated points are drawn as dots
        QCOMPARE(svg.count("<circle"), 2);
        QVERIFY(!svg.contains("nan", Qt::CaseInsensitive));
        QVERIFY(!svg.contains("xmlns"));
        SvgOptions standalone;
        standalone.xmlNamespace = true;
        QVERIFY(renderSvgChart(twoSeries(), standalone).contains("xmlns=\"http://www.w3.org/2000/svg\""));
    }

    void markersAreListedAndCapped()
    {
        LineChart c = twoSeries();
        for (int i = 0; i < 9; ++i)
            c.markers.push_back({1.0 + i * 0.4, QStringLiteral("v%1").arg(i + 2), QStringLiteral("change <%1>").arg(i)});
        const QString svg = renderSvgChart(c);
        QVERIFY(wellFormed(svg));
        QCOMPARE(svg.count("stroke-dasharray=\"4 3\""), 9); // every marker line
        QVERIFY(svg.contains("change &lt;0&gt;"));
        QVERIFY(svg.contains("and 3 more config changes")); // 6 listed, 3 counted
        QCOMPARE(chartHeight(c), chartHeight(twoSeries()) + 7 * 15);
    }

    void clampsToAFixedTop()
    {
        LineChart c{QStringLiteral("Utilization"), QStringLiteral("%")};
        c.x = {0, 1};
        c.yMax = 100;
        c.series = {{QStringLiteral("busy"), QStringLiteral("#9467bd"), {50, 130}}};
        const QString svg = renderSvgChart(c);
        QVERIFY(svg.contains(">100</text>"));
        QVERIFY(!svg.contains(">120</text>"));
    }

    void emptyChartSaysSo()
    {
        LineChart c{QStringLiteral("Throughput"), QStringLiteral("requests/s")};
        const QString svg = renderSvgChart(c);
        QVERIFY(wellFormed(svg));
        QVERIFY(svg.contains("no metric samples"));
        QVERIFY(!svg.contains("<path"));
    }
};

QTEST_GUILESS_MAIN(TestSvgChart)
#include "test_svg_chart.moc"
