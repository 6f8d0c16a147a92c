// The live charts' widgets, built once: a TimeChartView per figure and
// the batch-size histogram, in a grid. The builders run in the order the
// charts are made, which is the order the keyboard's tab visits them.
#include "charts_view.h"

#include "charts_view_series.h"

#include "gui_profiler.h"
#include "time_chart_view.h"

#include <QAreaSeries>
#include <QChart>
#include <QChartView>
#include <QGridLayout>
#include <QLegend>
#include <QLineSeries>
#include <QValueAxis>

#include <algorithm>

namespace bp::ui {

using namespace charts;

namespace {
// The batch-size chart is a plain chart view; its painting counts too.
class ProfiledChartView : public QChartView {
public:
    using QChartView::QChartView;

protected:
    void paintEvent(QPaintEvent *event) override
    {
        GuiProfiler::Scope scope(GuiProfiler::Paint);
        QChartView::paintEvent(event);
    }
};
} // namespace

void ChartsView::buildLatencyChart()
{
    m_latency = new TimeChartView(tr("Latency: total and queue wait (2 s window)"), tr("ms"), this);
    m_latency->addSeries(tr("p50"), QColor(120, 170, 230));
    m_latency->addSeries(tr("p90"), QColor(40, 110, 200));
    m_latency->addSeries(tr("p99"), QColor(10, 40, 130), TimeChartView::Axis::Left, Qt::SolidLine, 2.2);
    m_latency->addSeries(tr("queue p50"), QColor(240, 170, 60), TimeChartView::Axis::Left, Qt::DashLine);
    m_latency->addSeries(tr("queue p99"), QColor(210, 100, 0), TimeChartView::Axis::Left, Qt::DashLine, 2);
    // The Advisor's prediction (setPrediction): hidden until applied live.
    m_latency->addSeries(tr("predicted p99"), QColor(10, 40, 130), TimeChartView::Axis::Left, Qt::DashDotLine,
                         2.4);
    m_latency->setSeriesVisible(PredictedP99, false);
}

void ChartsView::buildThroughputChart()
{
    m_throughput = new TimeChartView(tr("Throughput"), tr("requests/s"), this);
    m_throughput->addSeries(tr("requests/s"), QColor(30, 130, 60), TimeChartView::Axis::Left, Qt::SolidLine,
                            2.2);
    m_throughput->addSeries(tr("in tokens/s"), QColor(150, 90, 200), TimeChartView::Axis::Right,
                            Qt::DashLine);
    m_throughput->addSeries(tr("out tokens/s"), QColor(200, 60, 140), TimeChartView::Axis::Right, Qt::DotLine,
                            2);
    m_throughput->setRightAxisTitle(tr("tokens/s"));
    // Same unit as requests/s: the gap between the two is the SLO misses.
    m_throughput->addSeries(tr("goodput/s"), QColor(0, 150, 150), TimeChartView::Axis::Left, Qt::SolidLine,
                            2.2);
    m_throughput->setSeriesVisible(Goodput, false);
}

void ChartsView::buildUtilizationChart()
{
    m_utilization = new TimeChartView(tr("Utilization"), tr("%"), this);
    m_utilization->addSeries(tr("engine busy"), QColor(30, 130, 60), TimeChartView::Axis::Left, Qt::SolidLine,
                             2);
    m_utilization->addSeries(tr("process CPU"), QColor(40, 110, 200));
    m_utilization->addSeries(tr("GPU compute"), QColor(118, 185, 0), TimeChartView::Axis::Left, Qt::SolidLine,
                             2);
    m_utilization->addSeries(tr("memory bandwidth"), QColor(200, 60, 140));
    m_utilization->addSeries(tr("memory used"), QColor(90, 90, 90), TimeChartView::Axis::Right, Qt::DashLine);
    m_utilization->setFixedMax(TimeChartView::Axis::Left, 100);
    m_utilization->setRightAxisTitle(tr("GiB"));
}

// Queue depth; padding efficiency with the mean batch size.
void ChartsView::buildQueueCharts()
{
    m_queue = new TimeChartView(tr("Queue depth"), tr("requests"), this);
    m_queue->addSeries(tr("queued"), QColor(210, 100, 0), TimeChartView::Axis::Left, Qt::SolidLine, 2);

    m_padding =
        new TimeChartView(tr("Padding efficiency and batch size (2 s window)"), tr("% real tokens"), this);
    m_padding->addSeries(tr("padding efficiency"), QColor(40, 110, 200), TimeChartView::Axis::Left,
                         Qt::SolidLine, 2);
    m_padding->addSeries(tr("mean batch size"), QColor(30, 130, 60), TimeChartView::Axis::Right,
                         Qt::DashLine);
    m_padding->setFixedMax(TimeChartView::Axis::Left, 100);
    m_padding->setRightAxisTitle(tr("requests/batch"));
}

// Generation: TTFT on the left, TPOT on the right (their scales differ
// by ~10-100x), each SLO a dotted line in its series' colour; running and
// waiting sequences with the KV cache.
void ChartsView::buildGenerationCharts()
{
    m_tokens = new TimeChartView(tr("TTFT and TPOT (2 s window)"), tr("TTFT ms"), this);
    m_tokens->addSeries(tr("TTFT p50"), QColor(120, 170, 230));
    m_tokens->addSeries(tr("p99"), QColor(10, 40, 130), TimeChartView::Axis::Left, Qt::SolidLine, 2.2);
    m_tokens->addSeries(tr("TPOT p50"), QColor(240, 170, 60), TimeChartView::Axis::Right, Qt::DashLine);
    m_tokens->addSeries(tr("p99"), QColor(210, 100, 0), TimeChartView::Axis::Right, Qt::DashLine, 2.2);
    m_tokens->addSeries(tr("TTFT SLO"), QColor(10, 40, 130), TimeChartView::Axis::Left, Qt::DotLine, 1.6);
    m_tokens->addSeries(tr("TPOT SLO"), QColor(210, 100, 0), TimeChartView::Axis::Right, Qt::DotLine, 1.6);
    m_tokens->addSeries(tr("predicted"), QColor(10, 40, 130), TimeChartView::Axis::Left, Qt::DashDotLine,
                        2.4);
    m_tokens->addSeries(tr("predicted"), QColor(210, 100, 0), TimeChartView::Axis::Right, Qt::DashDotLine,
                        2.4);
    m_tokens->setSeriesVisible(PredictedTtft, false);
    m_tokens->setSeriesVisible(PredictedTpot, false);
    m_tokens->setRightAxisTitle(tr("TPOT ms"));
    m_tokens->setSeriesVisible(TtftSlo, false);
    m_tokens->setSeriesVisible(TpotSlo, false);
    m_tokens->setInLegend(TtftSlo, false); // the title names them: four charts a row leave no room
    m_tokens->setInLegend(TpotSlo, false);

    m_sequences = new TimeChartView(tr("Sequences and KV cache"), tr("sequences"), this);
    m_sequences->addSeries(tr("running"), QColor(30, 130, 60), TimeChartView::Axis::Left, Qt::SolidLine, 2);
    m_sequences->addSeries(tr("waiting"), QColor(210, 100, 0), TimeChartView::Axis::Left, Qt::SolidLine, 1.6);
    m_sequences->addSeries(tr("KV cache"), QColor(150, 90, 200), TimeChartView::Axis::Right, Qt::DashLine,
                           1.6);
    // Prefix caching: the hit rate on the % axis (the cached blocks' tokens
    // when the KV budget is unlimited); empty while it is off.
    m_sequences->addSeries(tr("prefix hits"), QColor(20, 150, 170), TimeChartView::Axis::Right, Qt::DotLine,
                           1.6);
}

// Batch-size distribution: bars drawn as one area under a step line, so
// the whole histogram is still one bulk replace.
void ChartsView::buildBatchSizeChart()
{
    auto *chart = new QChart;
    chart->setTitle(tr("Batch sizes (last %1 s)").arg(kBatchSizeWindowS));
    QFont title;
    title.setBold(true);
    title.setPointSizeF(title.pointSizeF());
    chart->setTitleFont(title);
    chart->setMargins(QMargins(4, 2, 4, 2));
    chart->setBackgroundRoundness(0);
    chart->legend()->hide();
    m_batchSizeLine = new QLineSeries(chart);
    auto *area = new QAreaSeries(m_batchSizeLine);
    area->setColor(QColor(40, 110, 200, 190));
    area->setBorderColor(QColor(10, 40, 130));
    chart->addSeries(area);
    QFont small;
    small.setPointSizeF(std::max(6.0, small.pointSizeF() - 1));
    m_batchSizeX = new QValueAxis;
    m_batchSizeX->setTitleText(tr("batch size (requests)"));
    m_batchSizeY = new QValueAxis;
    m_batchSizeY->setTitleText(tr("% of batches"));
    for (QValueAxis *a : {m_batchSizeX, m_batchSizeY}) {
        a->setLabelFormat(QStringLiteral("%g"));
        a->setLabelsFont(small);
        a->setTitleFont(small);
        a->setMinorTickCount(0);
    }
    m_batchSizeX->setRange(0, 17);
    m_batchSizeX->setTickType(QValueAxis::TicksDynamic);
    m_batchSizeX->setTickAnchor(0);
    m_batchSizeX->setTickInterval(5);
    m_batchSizeY->setRange(0, 100);
    m_batchSizeY->setTickCount(6);
    chart->addAxis(m_batchSizeX, Qt::AlignBottom);
    chart->addAxis(m_batchSizeY, Qt::AlignLeft);
    area->attachAxis(m_batchSizeX);
    area->attachAxis(m_batchSizeY);
    m_batchSizes = new ProfiledChartView(chart, this);
    m_batchSizes->setRenderHint(QPainter::Antialiasing, true);
    m_batchSizes->setMinimumSize(220, 170);
}

void ChartsView::layOut()
{
    auto *grid = new QGridLayout(this);
    grid->setContentsMargins(0, 0, 0, 0);
    grid->setSpacing(2);
    // Generation adds a column (hidden, it takes no room): each chart keeps
    // the height two rows give, which the docks below leave little of.
    grid->addWidget(m_latency, 0, 0);
    grid->addWidget(m_tokens, 0, 1);
    grid->addWidget(m_throughput, 0, 2);
    grid->addWidget(m_utilization, 0, 3);
    grid->addWidget(m_queue, 1, 0);
    grid->addWidget(m_sequences, 1, 1);
    grid->addWidget(m_batchSizes, 1, 2);
    grid->addWidget(m_padding, 1, 3);
    m_tokens->hide();
    m_sequences->hide();
}

} // namespace bp::ui
