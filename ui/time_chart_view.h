// One Qt Charts chart over time: line series on a left and (optionally) a
// right value axis, a time axis, and vertical markers with a caption (config
// changes) painted over the plot area. Series are always replaced in bulk
// (QXYSeries::replace); value axes are rescaled to "nice" maxima only when
// the maximum changes, so a steady chart does not relayout its labels.
// Used by the live charts and the session comparison.
#pragma once

#include <QChartView>
#include <QList>
#include <QPointF>

#include <vector>

class QLineSeries;
class QValueAxis;

namespace bp::ui {

class TimeChartView : public QChartView {
    Q_OBJECT
public:
    enum class Axis { Left, Right };
    struct Marker {
        double x = 0;
        QString caption;
        QString tooltip;
    };

    TimeChartView(const QString &title, const QString &leftAxisTitle, QWidget *parent = nullptr);

    // Returns the series' index for setPoints().
    int addSeries(const QString &name, const QColor &color, Axis axis = Axis::Left,
                  Qt::PenStyle style = Qt::SolidLine, qreal width = 1.6);
    void setRightAxisTitle(const QString &title);
    void setLeftAxisTitle(const QString &title);
    void setTimeAxisTitle(const QString &title);
    void setTitle(const QString &title);

    // Replaces the series' points in one call. More than kMaxPoints are
    // thinned first (thinned()): a days-long session's samples, one per
    // second, drawn in a chart a few hundred pixels wide.
    void setPoints(int series, const QList<QPointF> &points);
    static constexpr qsizetype kMaxPoints = 4000;
    // At most about `maxPoints` of `points` (in x order): each bucket of
    // consecutive points is kept as its lowest and its highest, in the order
    // they came, so spikes and dips stay visible. Fewer points: unchanged.
    static QList<QPointF> thinned(const QList<QPointF> &points, qsizetype maxPoints);
    void setSeriesVisible(int series, bool visible);
    void setSeriesName(int series, const QString &name);
    // Keeps a series out of the legend (a reference level the title names).
    void setInLegend(int series, bool inLegend);
    void setTimeRange(double from, double to);
    // Fixes an axis to [0, max] instead of following the data (percentages);
    // max 0 lets it follow the data again.
    void setFixedMax(Axis axis, double max);
    // Call after setPoints(): rescales the value axes to their series' maxima.
    void rescale();

    void setMarkers(std::vector<Marker> markers);
    const std::vector<Marker> &markers() const { return m_markers; }
    QLineSeries *series(int index) const { return m_series[index].line; }
    QValueAxis *timeAxis() const { return m_timeAxis; }
    QValueAxis *valueAxis(Axis axis) const { return axis == Axis::Left ? m_left : m_right; }

    // 1, 2, 2.5 or 5 × 10^k at or above v (1 for v <= 0).
    static double niceCeiling(double v);

protected:
    void drawForeground(QPainter *painter, const QRectF &rect) override;
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    bool viewportEvent(QEvent *event) override;

private:
    QValueAxis *axisFor(Axis axis);

    struct Series {
        QLineSeries *line = nullptr;
        Axis axis = Axis::Left;
        double max = 0;
        bool inLegend = true;
    };
    std::vector<Series> m_series;
    QValueAxis *m_timeAxis = nullptr;
    QValueAxis *m_left = nullptr;
    QValueAxis *m_right = nullptr;
    double m_fixedMax[2] = {0, 0};
    double m_shownMax[2] = {-1, -1};
    std::vector<Marker> m_markers;
};

} // namespace bp::ui
