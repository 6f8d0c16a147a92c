#include "charts_view.h"

#include "charts_view_series.h"

#include "gui_profiler.h"
#include "time_chart_view.h"

#include <QChart>
#include <QChartView>
#include <QLineSeries>
#include <QStringList>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace bp::ui {

using namespace charts;

ChartsView::ChartsView(QWidget *parent) : QWidget(parent), m_history(std::size_t(kHistoryS * 10) + 200)
{
    buildLatencyChart();
    buildThroughputChart();
    buildUtilizationChart();
    setUtilizationMode(false, {}, 0);
    buildQueueCharts();
    buildGenerationCharts();
    buildBatchSizeChart();
    layOut();

    for (TimeChartView *c : timeCharts()) {
        c->setTimeAxisTitle(tr("seconds (0 = now)"));
        c->setTimeRange(-m_windowS, 0);
    }
    m_redrawTimer.setSingleShot(true);
    m_redrawTimer.setInterval(kRedrawDelayMs);
    connect(&m_redrawTimer, &QTimer::timeout, this, &ChartsView::redraw);
}

QList<TimeChartView *> ChartsView::timeCharts() const
{
    return {m_latency, m_throughput, m_utilization, m_queue, m_padding, m_tokens, m_sequences};
}

void ChartsView::setGenerative(bool generative)
{
    if (generative == m_generative)
        return;
    m_generative = generative;
    m_tokens->setVisible(generative);
    m_sequences->setVisible(generative);
    // Four charts a row: Qt Charts elides what does not fit on one legend
    // line, so titles and names get shorter and the time axes' title
    // ("seconds (0 = now)") goes (the tick labels say it).
    for (TimeChartView *c : timeCharts())
        c->setTimeAxisTitle(generative ? QString() : tr("seconds (0 = now)"));
    m_latency->setTitle(generative ? tr("Latency (2 s window)")
                                   : tr("Latency: total and queue wait (2 s window)"));
    m_latency->setSeriesName(QueueP50, generative ? tr("wait p50") : tr("queue p50"));
    m_latency->setSeriesName(QueueP99, generative ? tr("wait p99") : tr("queue p99"));
    m_throughput->setSeriesName(Requests, generative ? tr("req/s") : tr("requests/s"));
    m_throughput->setSeriesName(InputTokens, generative ? tr("in tok/s") : tr("in tokens/s"));
    m_throughput->setSeriesName(OutputTokens, generative ? tr("out tok/s") : tr("out tokens/s"));
    m_padding->setTitle(generative ? tr("Padding and batch size (2 s)")
                                   : tr("Padding efficiency and batch size (2 s window)"));
    m_padding->setSeriesName(Padding, generative ? tr("padding eff.") : tr("padding efficiency"));
    m_padding->setSeriesName(MeanBatch, generative ? tr("mean batch") : tr("mean batch size"));
    if (!generative)
        m_throughput->setSeriesVisible(Goodput, false);
    m_shownSlos = {-1, -1, -1};
    scheduleRedraw();
}

void ChartsView::showSlos(const GoodputSlos &slos, bool kvBounded)
{
    if (slos != m_shownSlos) {
        m_shownSlos = slos;
        m_tokens->setSeriesVisible(TtftSlo, slos.ttftMs > 0);
        m_tokens->setSeriesVisible(TpotSlo, slos.tpotMs > 0);
        m_tokens->setSeriesName(TtftSlo, tr("SLO %1 ms").arg(slos.ttftMs));
        m_tokens->setSeriesName(TpotSlo, tr("SLO %1 ms").arg(slos.tpotMs));
        m_throughput->setSeriesVisible(Goodput, slos.any());
        // The SLOs goodput counts against: TTFT's and TPOT's on their axes
        // (the dotted levels), e2e's in the throughput title.
        m_throughput->setTitle(!slos.any()      ? tr("Throughput")
                               : slos.e2eMs > 0 ? tr("Throughput and goodput (e2e ≤ %1 ms)").arg(slos.e2eMs)
                                                : tr("Throughput and goodput"));
        m_tokens->setLeftAxisTitle(slos.ttftMs > 0 ? tr("TTFT ms (SLO %1)").arg(slos.ttftMs) : tr("TTFT ms"));
        m_tokens->setRightAxisTitle(slos.tpotMs > 0 ? tr("TPOT ms (SLO %1)").arg(slos.tpotMs)
                                                    : tr("TPOT ms"));
    }
    if (int(kvBounded) != m_kvMode) {
        m_kvMode = int(kvBounded);
        m_sequences->setSeriesName(Kv, kvBounded ? tr("KV cache used") : tr("KV tokens (no budget)"));
        m_sequences->setSeriesName(PrefixHits, kvBounded ? tr("prefix hit %") : tr("prefix-cached tokens"));
        m_sequences->setRightAxisTitle(kvBounded ? tr("% of KV budget") : tr("KV tokens"));
        m_sequences->setFixedMax(TimeChartView::Axis::Right, kvBounded ? 100 : 0);
    }
}

void ChartsView::addHostSample(const app::HostSample &sample)
{
    const bool gpu = sample.gpu.has_value();
    if (!m_modeSet || gpu != m_gpuMode)
        setUtilizationMode(gpu, QString::fromStdString(sample.gpuName), sample.cores);
    m_host = sample;
}

void ChartsView::setUtilizationMode(bool gpu, const QString &gpuName, int cores)
{
    m_gpuMode = gpu;
    m_modeSet = cores > 0;
    m_utilization->setSeriesVisible(Gpu, gpu);
    m_utilization->setSeriesVisible(MemBw, gpu);
    m_utilization->setSeriesVisible(MemUsed, gpu);
    m_utilization->setSeriesVisible(Cpu, !gpu);
    m_utilization->valueAxis(TimeChartView::Axis::Right)->setVisible(gpu);
    if (gpu) {
        m_utilization->setTitle(
            tr("GPU utilization (NVML: %1)").arg(gpuName.isEmpty() ? tr("GPU") : gpuName));
    } else {
        m_utilization->setTitle(tr("Utilization (no NVIDIA GPU: CPU figures)"));
        m_utilization->setSeriesName(Cpu, cores > 0 ? tr("process CPU (of %1 cores)").arg(cores)
                                                    : tr("process CPU"));
    }
}

void ChartsView::addSnapshot(const app::SnapshotPtr &snapshot)
{
    GuiProfiler::Scope scope(GuiProfiler::Update);
    GuiProfiler::instance().countSnapshot(snapshot->requestsPerS);
    m_history.add(*snapshot, m_host ? &*m_host : nullptr);
    if (m_history.generated() && !m_generative)
        setGenerative(true);
    const BatchingConfig &c = snapshot->config;
    m_largestBatch = c.policy == PolicyKind::Static ? c.staticBatchSize
                     : c.policy == PolicyKind::None ? 1
                                                    : c.maxBatchSize;
    scheduleRedraw();
}

void ChartsView::scheduleRedraw()
{
    if (!m_paused && isVisible() && !m_redrawTimer.isActive())
        m_redrawTimer.start();
}

void ChartsView::setWindow(double seconds)
{
    m_windowS = std::clamp(seconds, 5.0, kHistoryS);
    for (TimeChartView *c : timeCharts())
        c->setTimeRange(-m_windowS, 0);
    redraw();
}

void ChartsView::setPaused(bool paused)
{
    m_paused = paused;
    if (!paused)
        scheduleRedraw();
}

void ChartsView::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    scheduleRedraw();
}

} // namespace bp::ui
