#include "advisor_chart.h"

#include "time_chart_view.h"

#include <QChart>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace bp::ui {

namespace {
int bounds(const TuneSlo &slo)
{
    return int(slo.e2eP99 > Duration::zero()) + int(slo.ttftP99 > Duration::zero()) +
           int(slo.tpotP99 > Duration::zero());
}
double boundValue(const TuneSlo &slo)
{
    if (bounds(slo) != 1)
        return 1;
    const Duration d = slo.e2eP99 > Duration::zero()    ? slo.e2eP99
                       : slo.ttftP99 > Duration::zero() ? slo.ttftP99
                                                        : slo.tpotP99;
    return toSeconds(d) * 1e3;
}
} // namespace

AdvisorChart::AdvisorChart(QWidget *parent) : QChartView(parent)
{
    auto *chart = new QChart;
    chart->setMargins(QMargins(4, 2, 4, 2));
    chart->setBackgroundRoundness(0);
    QFont title;
    title.setBold(true);
    chart->setTitleFont(title);
    chart->legend()->setAlignment(Qt::AlignBottom);

    m_all = new QScatterSeries(chart);
    m_all->setName(tr("candidates"));
    m_all->setMarkerSize(6);
    m_all->setColor(QColor(150, 150, 150, 150));
    m_all->setBorderColor(Qt::transparent);
    m_front = new QLineSeries(chart);
    m_front->setName(tr("Pareto front"));
    m_front->setPen(QPen(QColor(40, 110, 200), 2));
    m_frontPoints = new QScatterSeries(chart);
    m_frontPoints->setMarkerSize(9);
    m_frontPoints->setColor(QColor(40, 110, 200));
    m_frontPoints->setBorderColor(QColor(10, 40, 130));
    m_bound = new QLineSeries(chart);
    m_bound->setName(tr("SLO bound"));
    m_bound->setPen(QPen(QColor(200, 30, 30), 1.6, Qt::DashLine));
    m_selected = new QScatterSeries(chart);
    m_selected->setName(tr("selected"));
    m_selected->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    m_selected->setMarkerSize(13);
    m_selected->setColor(Qt::transparent);
    m_selected->setBorderColor(QColor(20, 20, 20));
    m_recommended = new QScatterSeries(chart);
    m_recommended->setName(tr("recommended"));
    m_recommended->setMarkerShape(QScatterSeries::MarkerShapeStar);
    m_recommended->setMarkerSize(20);
    m_recommended->setColor(QColor(240, 160, 0));
    m_recommended->setBorderColor(QColor(140, 70, 0));

    m_x = new QLogValueAxis;
    m_x->setLabelFormat(QStringLiteral("%g"));
    m_x->setMinorTickCount(8);
    m_y = new QValueAxis;
    m_y->setTitleText(tr("throughput (requests/s)"));
    m_y->setLabelFormat(QStringLiteral("%g"));
    QFont small;
    small.setPointSizeF(std::max(6.0, small.pointSizeF() - 1));
    for (QAbstractAxis *a : {static_cast<QAbstractAxis *>(m_x), static_cast<QAbstractAxis *>(m_y)}) {
        a->setLabelsFont(small);
        a->setTitleFont(small);
    }
    chart->addAxis(m_x, Qt::AlignBottom);
    chart->addAxis(m_y, Qt::AlignLeft);
    for (QXYSeries *s : std::initializer_list<QXYSeries *>{m_all, m_front, m_frontPoints, m_bound, m_selected,
                                                           m_recommended}) {
        chart->addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_y);
    }
    // The front's points share the line's legend entry.
    chart->legend()->markers(m_frontPoints).front()->setVisible(false);
    chart->legend()->markers(m_selected).front()->setVisible(false);
    setChart(chart);
    setRenderHint(QPainter::Antialiasing, true);
    setMinimumSize(280, 220);
    clear();
}

double AdvisorChart::metricOf(const TuneFigures &f, const TuneSlo &slo)
{
    if (bounds(slo) != 1)
        return f.sloRatio;
    const double s = slo.e2eP99 > Duration::zero()    ? f.p99S
                     : slo.ttftP99 > Duration::zero() ? f.ttftP99S
                                                      : f.tpotP99S;
    return s * 1e3;
}

QString AdvisorChart::metricName(const TuneSlo &slo)
{
    if (bounds(slo) != 1)
        return tr("SLO ratio (worst p99 / its bound; ≤ 1 meets the SLO)");
    if (slo.e2eP99 > Duration::zero())
        return tr("p99 latency (ms, log scale)");
    return slo.ttftP99 > Duration::zero() ? tr("TTFT p99 (ms, log scale)") : tr("TPOT p99 (ms, log scale)");
}

QPointF AdvisorChart::pointOf(const TuneCandidate &c) const
{
    return {metricOf(c.figures, m_slo), c.figures.throughputPerS};
}

void AdvisorChart::clear()
{
    m_result = {};
    for (QXYSeries *s : std::initializer_list<QXYSeries *>{m_all, m_front, m_frontPoints, m_bound, m_selected,
                                                           m_recommended})
        s->clear();
    chart()->setTitle(tr("Pareto front: run a search"));
    m_x->setTitleText(tr("SLO metric"));
    m_x->setRange(1, 1000);
    m_y->setRange(0, 10);
}

void AdvisorChart::setResult(const TuneResult &result, const TuneSlo &slo)
{
    m_result = result;
    m_slo = slo;
    QList<QPointF> all, front;
    std::size_t unplaced = 0;
    double lo = boundValue(slo), hi = lo, top = 0;
    for (const TuneCandidate &c : result.candidates) {
        const QPointF p = pointOf(c);
        if (!std::isfinite(p.x()) || p.x() <= 0) {
            ++unplaced;
            continue;
        }
        all.append(p);
        lo = std::min(lo, p.x());
        hi = std::max(hi, p.x());
        top = std::max(top, p.y());
    }
    for (std::size_t i : result.pareto) {
        const QPointF p = pointOf(result.candidates[i]);
        if (std::isfinite(p.x()) && p.x() > 0)
            front.append(p);
    }
    std::sort(front.begin(), front.end(), [](QPointF a, QPointF b) { return a.x() < b.x(); });
    m_all->replace(all);
    m_front->replace(front);
    m_frontPoints->replace(front);
    m_recommended->clear();
    if (result.recommended) {
        const QPointF p = pointOf(result.candidates[*result.recommended]);
        if (std::isfinite(p.x()) && p.x() > 0)
            m_recommended->append(p);
    }
    m_selected->clear();
    // Whole decades around the points and the bound, with room on both
    // sides: a bound or a point on a whole decade (a 10 ms SLO) would
    // otherwise sit on the chart's edge, where its line cannot be seen.
    const double xMin = std::pow(10, std::floor(std::log10(lo * 0.9))),
                 xMax = std::pow(10, std::ceil(std::log10(hi * 1.1)));
    m_x->setRange(xMin, xMax > xMin ? xMax : xMin * 10);
    const double yMax = TimeChartView::niceCeiling(top * 1.08);
    m_y->setRange(0, yMax);
    m_bound->replace({QPointF(boundValue(slo), 0), QPointF(boundValue(slo), yMax)});
    m_x->setTitleText(metricName(slo));
    chart()->setTitle(tr("Pareto front: %1 configs, %2 on the front%3")
                          .arg(result.candidates.size())
                          .arg(front.size())
                          .arg(unplaced ? tr("; %1 at ∞ not drawn").arg(unplaced) : QString()));
}

void AdvisorChart::setHighlighted(int candidate)
{
    m_selected->clear();
    if (candidate < 0 || std::size_t(candidate) >= m_result.candidates.size())
        return;
    const QPointF p = pointOf(m_result.candidates[std::size_t(candidate)]);
    if (std::isfinite(p.x()) && p.x() > 0)
        m_selected->append(p);
}

} // namespace bp::ui
