#include "time_chart_view.h"

#include "gui_profiler.h"

#include <QChart>
#include <QGraphicsLayout>
#include <QHelpEvent>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QToolTip>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace bp::ui {

namespace {
QFont smallFont(int delta = -1, bool bold = false)
{
    QFont f;
    f.setPointSizeF(std::max(6.0, f.pointSizeF() + delta));
    f.setBold(bold);
    return f;
}

QValueAxis *makeAxis(const QString &title)
{
    auto *axis = new QValueAxis;
    axis->setTitleText(title);
    axis->setTitleFont(smallFont(-1));
    axis->setLabelsFont(smallFont(-1));
    axis->setLabelFormat(QStringLiteral("%g"));
    axis->setRange(0, 1);
    axis->setTickCount(6);
    axis->setMinorTickCount(0);
    return axis;
}
} // namespace

TimeChartView::TimeChartView(const QString &title, const QString &leftAxisTitle, QWidget *parent)
    : QChartView(new QChart, parent)
{
    QChart *c = chart();
    c->setTitle(title);
    c->setTitleFont(smallFont(0, true));
    c->setMargins(QMargins(4, 2, 4, 2));
    c->layout()->setContentsMargins(0, 0, 0, 0);
    c->setBackgroundRoundness(0);
    c->legend()->setAlignment(Qt::AlignBottom);
    c->legend()->setFont(smallFont(-1));
    c->setAnimationOptions(QChart::NoAnimation);
    m_timeAxis = makeAxis(tr("seconds"));
    m_timeAxis->setLabelFormat(QStringLiteral("%.0f"));
    m_timeAxis->setTickCount(7);
    c->addAxis(m_timeAxis, Qt::AlignBottom);
    m_left = makeAxis(leftAxisTitle);
    c->addAxis(m_left, Qt::AlignLeft);
    setRenderHint(QPainter::Antialiasing, true);
    setMinimumSize(220, 170);
}

QValueAxis *TimeChartView::axisFor(Axis axis)
{
    if (axis == Axis::Left)
        return m_left;
    if (!m_right) {
        m_right = makeAxis(QString());
        chart()->addAxis(m_right, Qt::AlignRight);
    }
    return m_right;
}

int TimeChartView::addSeries(const QString &name, const QColor &color, Axis axis, Qt::PenStyle style,
                             qreal width)
{
    auto *line = new QLineSeries;
    line->setName(name);
    QPen pen(color);
    pen.setWidthF(width);
    pen.setStyle(style);
    line->setPen(pen);
    chart()->addSeries(line);
    line->attachAxis(m_timeAxis);
    line->attachAxis(axisFor(axis));
    m_series.push_back({line, axis, 0});
    return int(m_series.size()) - 1;
}

void TimeChartView::setRightAxisTitle(const QString &title)
{
    axisFor(Axis::Right)->setTitleText(title);
}
void TimeChartView::setLeftAxisTitle(const QString &title)
{
    m_left->setTitleText(title);
}
void TimeChartView::setTimeAxisTitle(const QString &title)
{
    m_timeAxis->setTitleText(title);
}
void TimeChartView::setTitle(const QString &title)
{
    if (chart()->title() != title)
        chart()->setTitle(title);
}

void TimeChartView::setPoints(int index, const QList<QPointF> &points)
{
    Series &s = m_series[index];
    double max = 0;
    for (const QPointF &p : points)
        if (std::isfinite(p.y()))
            max = std::max(max, p.y());
    s.max = max;
    s.line->replace(points.size() > kMaxPoints ? thinned(points, kMaxPoints) : points);
}

QList<QPointF> TimeChartView::thinned(const QList<QPointF> &points, qsizetype maxPoints)
{
    const qsizetype n = points.size();
    if (maxPoints < 2 || n <= maxPoints)
        return points;
    const qsizetype bucket = (2 * n + maxPoints - 1) / maxPoints; // two points kept per bucket
    QList<QPointF> out;
    out.reserve(2 * (n / bucket + 1));
    for (qsizetype i = 0; i < n; i += bucket) {
        const qsizetype end = std::min(n, i + bucket);
        qsizetype lo = i, hi = i;
        for (qsizetype k = i + 1; k < end; ++k) {
            if (points[k].y() < points[lo].y())
                lo = k;
            if (points[k].y() > points[hi].y())
                hi = k;
        }
        out.append(points[std::min(lo, hi)]);
        if (lo != hi)
            out.append(points[std::max(lo, hi)]);
    }
    return out;
}

void TimeChartView::setSeriesVisible(int index, bool visible)
{
    QLineSeries *line = m_series[index].line;
    if (line->isVisible() != visible) {
        line->setVisible(visible);
        chart()->legend()->markers(line).value(0)->setVisible(visible && m_series[index].inLegend);
    }
}

void TimeChartView::setInLegend(int index, bool inLegend)
{
    Series &s = m_series[index];
    s.inLegend = inLegend;
    chart()->legend()->markers(s.line).value(0)->setVisible(inLegend && s.line->isVisible());
}

void TimeChartView::setSeriesName(int index, const QString &name)
{
    if (m_series[index].line->name() != name)
        m_series[index].line->setName(name);
}

void TimeChartView::setTimeRange(double from, double to)
{
    if (m_timeAxis->min() != from || m_timeAxis->max() != to)
        m_timeAxis->setRange(from, to);
}

void TimeChartView::resizeEvent(QResizeEvent *event)
{
    QChartView::resizeEvent(event);
    // Fewer value ticks on a short chart: six labels in ~60 px of plot would
    // overlap and Qt elides them all to "...". ~90 px go to the title, the
    // time axis and the legend.
    const int ticks = std::clamp((height() - 90) / 24 + 1, 3, 6);
    for (QValueAxis *a : {m_left, m_right})
        if (a && a->tickCount() != ticks)
            a->setTickCount(ticks);
}

void TimeChartView::setFixedMax(Axis axis, double max)
{
    const int i = axis == Axis::Left ? 0 : 1;
    m_fixedMax[i] = max;
    m_shownMax[i] = -1; // 0 = follow the data again, from the next rescale()
    if (max > 0)
        axisFor(axis)->setRange(0, max);
}

void TimeChartView::rescale()
{
    for (Axis axis : {Axis::Left, Axis::Right}) {
        const int i = axis == Axis::Left ? 0 : 1;
        QValueAxis *a = axis == Axis::Left ? m_left : m_right;
        if (!a || m_fixedMax[i] > 0)
            continue;
        double max = 0;
        for (const Series &s : m_series)
            if (s.axis == axis && s.line->isVisible())
                max = std::max(max, s.max);
        const double nice = niceCeiling(max * 1.05);
        if (nice != m_shownMax[i]) {
            a->setRange(0, nice);
            m_shownMax[i] = nice;
        }
    }
}

double TimeChartView::niceCeiling(double v)
{
    if (!(v > 0) || !std::isfinite(v))
        return 1;
    const double decade = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
        if (m * decade >= v * (1 - 1e-12))
            return m * decade;
    return 10 * decade;
}

void TimeChartView::setMarkers(std::vector<Marker> markers)
{
    m_markers = std::move(markers);
    viewport()->update();
}

void TimeChartView::drawForeground(QPainter *painter, const QRectF &rect)
{
    QChartView::drawForeground(painter, rect);
    if (m_markers.empty())
        return;
    const QRectF plot = chart()->plotArea();
    const double span = m_timeAxis->max() - m_timeAxis->min();
    if (span <= 0)
        return;
    painter->save();
    painter->setClipRect(plot.adjusted(0, -1, 1, 1));
    QPen pen(QColor(200, 60, 30));
    pen.setStyle(Qt::DashLine);
    pen.setWidthF(1.2);
    const QFont font = smallFont(-2);
    painter->setFont(font);
    const QFontMetrics fm(font);
    int row = 0;
    double lastLabelRight = -1e9;
    for (const Marker &m : m_markers) {
        if (m.x < m_timeAxis->min() || m.x > m_timeAxis->max())
            continue;
        const double x = plot.left() + (m.x - m_timeAxis->min()) / span * plot.width();
        painter->setPen(pen);
        painter->drawLine(QPointF(x, plot.top()), QPointF(x, plot.bottom()));
        if (m.caption.isEmpty())
            continue;
        // Captions to the left of the line when it is near the right edge;
        // staggered in rows when they would overlap.
        const QString text = fm.elidedText(m.caption, Qt::ElideRight, int(plot.width() * 0.6));
        const int w = fm.horizontalAdvance(text) + 6;
        double left = x + 2;
        if (left + w > plot.right())
            left = x - 2 - w;
        row = left < lastLabelRight ? (row + 1) % 3 : 0;
        const QRectF box(left, plot.top() + 2 + row * (fm.height() + 2), w, fm.height());
        painter->fillRect(box, QColor(255, 250, 235, 225));
        painter->setPen(QColor(150, 40, 10));
        painter->drawText(box, Qt::AlignCenter, text);
        lastLabelRight = std::max(lastLabelRight, box.right());
    }
    painter->restore();
}

void TimeChartView::paintEvent(QPaintEvent *event)
{
    GuiProfiler::Scope scope(GuiProfiler::Paint);
    QChartView::paintEvent(event);
}

bool TimeChartView::viewportEvent(QEvent *event)
{
    if (event->type() == QEvent::ToolTip && !m_markers.empty()) {
        auto *help = static_cast<QHelpEvent *>(event);
        const QRectF plot = chart()->plotArea();
        const double span = m_timeAxis->max() - m_timeAxis->min();
        const QPointF scene = mapToScene(help->pos());
        for (const Marker &m : m_markers) {
            const double x = plot.left() + (m.x - m_timeAxis->min()) / span * plot.width();
            if (std::abs(scene.x() - x) <= 4 && plot.contains(QPointF(x, scene.y()))) {
                QToolTip::showText(help->globalPos(), m.tooltip.isEmpty() ? m.caption : m.tooltip, this);
                return true;
            }
        }
        QToolTip::hideText();
    }
    return QChartView::viewportEvent(event);
}

} // namespace bp::ui
