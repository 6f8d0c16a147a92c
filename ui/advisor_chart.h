// The Advisor dock's Pareto chart: every candidate of a search as a point
// (throughput against the SLO metric), the Pareto front as a line through
// its points, the recommendation as a star and the SLO's bound as a dashed
// vertical line. The x axis is logarithmic: an overloaded config's p99 is
// orders of magnitude above a good one's. Candidates whose metric is
// infinite (too many requests failed) cannot be placed; the title counts
// them. The metric is the bounded p99 (end to end, TTFT or TPOT) when the
// SLO bounds one, else the SLO ratio (the worst p99 / its bound; 1 = met).
#pragma once

#include "engine/sim/tune/tuner.h"

#include <QChartView>

class QLineSeries;
class QLogValueAxis;
class QScatterSeries;
class QValueAxis;

namespace bp::ui {

class AdvisorChart : public QChartView {
    Q_OBJECT
public:
    explicit AdvisorChart(QWidget *parent = nullptr);

    void setResult(const TuneResult &result, const TuneSlo &slo);
    void clear();
    // The candidate shown highlighted (a table selection); -1: none.
    void setHighlighted(int candidate);

    QScatterSeries *candidateSeries() const { return m_all; }
    QScatterSeries *frontSeries() const { return m_frontPoints; }
    QScatterSeries *recommendedSeries() const { return m_recommended; }
    QLineSeries *boundSeries() const { return m_bound; }

    // The value plotted for a candidate (ms, or the ratio), +inf when none.
    static double metricOf(const TuneFigures &f, const TuneSlo &slo);
    static QString metricName(const TuneSlo &slo);

private:
    QPointF pointOf(const TuneCandidate &c) const;

    TuneResult m_result;
    TuneSlo m_slo;
    QScatterSeries *m_all = nullptr;
    QLineSeries *m_front = nullptr;
    QScatterSeries *m_frontPoints = nullptr;
    QScatterSeries *m_recommended = nullptr;
    QScatterSeries *m_selected = nullptr;
    QLineSeries *m_bound = nullptr;
    QLogValueAxis *m_x = nullptr;
    QValueAxis *m_y = nullptr;
};

} // namespace bp::ui
