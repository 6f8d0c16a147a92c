// ChartsView: redrawing (coalesced by the redraw timer), the Advisor's
// prediction lines and the batch-size chart. Construction and the setters
// are in charts_view.cpp.
#include "charts_view.h"

#include "charts_view_series.h"
#include "gui_profiler.h"
#include "time_chart_view.h"

#include <QBarSet>
#include <QChart>
#include <QLineSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace bp::ui {

using namespace charts;

void ChartsView::redraw()
{
    GuiProfiler::Scope scope(GuiProfiler::Update);
    ++m_redraws;
    if (m_history.empty()) {
        emit redrawn();
        return;
    }
    const double now = m_history.latest().t;
    const WindowPoints points{m_history, m_history.firstAtOrAfter(now - m_windowS - 1), now};
    m_latency->setPoints(TotalP50, points(&ChartSample::totalP50Ms));
    m_latency->setPoints(TotalP90, points(&ChartSample::totalP90Ms));
    m_latency->setPoints(TotalP99, points(&ChartSample::totalP99Ms));
    m_latency->setPoints(QueueP50, points(&ChartSample::queueP50Ms));
    m_latency->setPoints(QueueP99, points(&ChartSample::queueP99Ms));
    drawPrediction(now);
    m_throughput->setPoints(Requests, points(&ChartSample::requestsPerS));
    m_throughput->setPoints(InputTokens, points(&ChartSample::inputTokensPerS));
    m_throughput->setPoints(OutputTokens, points(&ChartSample::outputTokensPerS));
    m_utilization->setPoints(Busy, points(&ChartSample::busyPercent));
    if (m_gpuMode) {
        m_utilization->setPoints(Gpu, points(&ChartSample::gpuPercent));
        m_utilization->setPoints(MemBw, points(&ChartSample::memBwPercent));
        m_utilization->setPoints(MemUsed, points(&ChartSample::memUsedGiB));
    } else {
        m_utilization->setPoints(Cpu, points(&ChartSample::cpuPercent));
    }
    m_queue->setPoints(0, points(&ChartSample::queueDepth));
    m_padding->setPoints(Padding, points(&ChartSample::paddingPercent));
    m_padding->setPoints(MeanBatch, points(&ChartSample::meanBatchSize));
    if (m_generative)
        drawGeneration(points);
    drawMarkers(now);
    redrawBatchSizes();
    emit redrawn();
}

// TTFT/TPOT with their SLOs, goodput, running and waiting sequences, the KV cache.
void ChartsView::drawGeneration(const WindowPoints &points)
{
    const ChartSample &last = m_history.latest();
    showSlos(m_history.slos(), !std::isnan(last.kvPercent));
    m_tokens->setPoints(TtftP50, points(&ChartSample::ttftP50Ms));
    m_tokens->setPoints(TtftP99, points(&ChartSample::ttftP99Ms));
    m_tokens->setPoints(TpotP50, points(&ChartSample::tpotP50Ms));
    m_tokens->setPoints(TpotP99, points(&ChartSample::tpotP99Ms));
    // A SLO is a level across the window (it may have changed in it, but
    // the chart shows the one in force, as the control panel does).
    auto level = [&](double v) {
        return v > 0 ? QList<QPointF>{QPointF(-m_windowS, v), QPointF(0, v)} : QList<QPointF>{};
    };
    m_tokens->setPoints(TtftSlo, level(m_history.slos().ttftMs));
    m_tokens->setPoints(TpotSlo, level(m_history.slos().tpotMs));
    m_throughput->setPoints(Goodput,
                            m_history.slos().any() ? points(&ChartSample::goodputPerS) : QList<QPointF>{});
    m_sequences->setPoints(Running, points(&ChartSample::runningSequences));
    m_sequences->setPoints(Waiting, points(&ChartSample::waitingSequences));
    m_sequences->setPoints(
        Kv, points(std::isnan(last.kvPercent) ? &ChartSample::kvTokens : &ChartSample::kvPercent));
    m_sequences->setPoints(PrefixHits, points(std::isnan(last.kvPercent) ? &ChartSample::prefixCacheTokens
                                                                         : &ChartSample::prefixHitPercent));
}

// A marker at every config change in the window, on every time chart, which rescale.
void ChartsView::drawMarkers(double now)
{
    std::vector<TimeChartView::Marker> markers;
    for (const ConfigMarker &m : m_history.markers()) {
        if (m.t < now - m_windowS)
            continue;
        TimeChartView::Marker marker;
        marker.x = m.t - now;
        marker.caption = m.summary;
        marker.tooltip = tr("config v%1 from %2: %3").arg(m.version).arg(m.origin, m.summary);
        markers.push_back(std::move(marker));
    }
    for (TimeChartView *c : timeCharts()) {
        c->rescale();
        c->setMarkers(markers);
    }
}

void ChartsView::setPrediction(std::uint64_t configVersion, const QString &label, double p99Ms,
                               double ttftP99Ms, double tpotP99Ms)
{
    m_prediction = Prediction{
        configVersion, m_history.empty() ? 0 : m_history.latest().t, label, p99Ms, ttftP99Ms, tpotP99Ms};
    auto drawn = [](double v) { return std::isfinite(v) && v > 0; };
    m_latency->setSeriesName(PredictedP99, tr("predicted p99 (%1)").arg(label));
    m_latency->setSeriesVisible(PredictedP99, drawn(p99Ms));
    m_tokens->setSeriesVisible(PredictedTtft, drawn(ttftP99Ms));
    m_tokens->setSeriesVisible(PredictedTpot, drawn(tpotP99Ms));
    scheduleRedraw();
}

void ChartsView::clearPrediction()
{
    m_prediction.reset();
    m_latency->setPoints(PredictedP99, {});
    m_latency->setSeriesVisible(PredictedP99, false);
    for (int series : {PredictedTtft, PredictedTpot}) {
        m_tokens->setPoints(series, {});
        m_tokens->setSeriesVisible(series, false);
    }
    scheduleRedraw();
}

void ChartsView::drawPrediction(double now)
{
    if (!m_prediction)
        return;
    for (const ConfigMarker &m : m_history.markers())
        if (m.version == m_prediction->version)
            m_prediction->fromT = m.t;
    const double from = std::max(m_prediction->fromT, now - m_windowS) - now;
    auto line = [&](double v) {
        return std::isfinite(v) && v > 0 ? QList<QPointF>{QPointF(from, v), QPointF(0, v)} : QList<QPointF>{};
    };
    m_latency->setPoints(PredictedP99, line(m_prediction->p99Ms));
    m_tokens->setPoints(PredictedTtft, line(m_prediction->ttftP99Ms));
    m_tokens->setPoints(PredictedTpot, line(m_prediction->tpotP99Ms));
}

void ChartsView::redrawBatchSizes()
{
    const std::vector<double> share = m_history.batchSizeShare(kBatchSizeWindowS);
    QList<QPointF> steps;
    steps.reserve(qsizetype(share.size()) * 4 + 2);
    double top = 0;
    steps.append(QPointF(0, 0));
    for (std::size_t size = 1; size < share.size(); ++size) {
        if (share[size] <= 0)
            continue;
        const double x = double(size), v = share[size];
        steps.append({QPointF(x - 0.4, 0), QPointF(x - 0.4, v), QPointF(x + 0.4, v), QPointF(x + 0.4, 0)});
        top = std::max(top, v);
    }
    const double xMax = std::max(double(m_largestBatch + 1), double(share.size()));
    steps.append(QPointF(xMax, 0));
    m_batchSizeLine->replace(steps);
    if (m_batchSizeX->max() != xMax) {
        m_batchSizeX->setRange(0, xMax);
        // Whole-number ticks, about six of them.
        double step = 1;
        for (int i = 0; step < xMax / 6; ++i)
            step *= i % 3 == 1 ? 2.5 : 2; // 1, 2, 5, 10, 20, 50, ...
        m_batchSizeX->setTickInterval(step);
    }
    const double yMax = std::min(100.0, TimeChartView::niceCeiling(top * 1.05));
    if (m_batchSizeY->max() != yMax)
        m_batchSizeY->setRange(0, yMax);
}

} // namespace bp::ui
