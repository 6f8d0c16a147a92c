// The live charts: latency, throughput, utilization, queue depth, batch-size
// distribution and padding efficiency over the last few minutes, with a
// marker at every config change. For a model that generates, a third row
// adds time to first token / time per output token (with the goodput SLOs
// as lines) and the running/waiting sequences with the KV cache's use, and
// the throughput chart gains goodput/s once an SLO is set; an encoder's
// view stays as it was. Snapshots go into a ChartHistory as they
// arrive; redraws are coalesced by a single-shot 40 ms timer and replace
// each series in bulk, and nothing is drawn while the view is hidden.
#pragma once

#include "chart_history.h"

#include <QTimer>
#include <QWidget>

#include <optional>

class QAreaSeries;
class QChartView;
class QLineSeries;
class QValueAxis;

namespace bp::ui {

class TimeChartView;
namespace charts {
struct WindowPoints;
}

class ChartsView : public QWidget {
    Q_OBJECT
public:
    explicit ChartsView(QWidget *parent = nullptr);

    void addSnapshot(const app::SnapshotPtr &snapshot);
    void addHostSample(const app::HostSample &sample);

    // Seconds of history shown (the buffer keeps kHistoryS).
    void setWindow(double seconds);
    double window() const { return m_windowS; }
    void setPaused(bool paused);
    bool paused() const { return m_paused; }

    const ChartHistory &history() const { return m_history; }
    std::size_t markerCount() const { return m_history.markers().size(); }
    std::size_t redraws() const { return m_redraws; }
    QList<TimeChartView *> timeCharts() const;
    // True once NVML samples arrived: the utilization chart shows the GPU.
    bool showsGpu() const { return m_gpuMode; }
    // Shows the generation charts (the model generates). They also appear by
    // themselves once a snapshot shows a generated request.
    void setGenerative(bool generative);
    bool showsGeneration() const { return m_generative; }
    TimeChartView *tokenChart() const { return m_tokens; }
    TimeChartView *sequenceChart() const { return m_sequences; }
    TimeChartView *throughputChart() const { return m_throughput; }

    // A prediction to hold the live latency against (the Advisor dock's
    // applied candidate): dash-dotted reference lines at the predicted p99
    // on the latency chart and, when > 0, the predicted TTFT p99 and TPOT
    // p99 on the TTFT/TPOT chart, next to the measured p99s, from the
    // config change `configVersion` on (from now when no such marker).
    void setPrediction(std::uint64_t configVersion, const QString &label, double p99Ms, double ttftP99Ms = 0,
                       double tpotP99Ms = 0);
    void clearPrediction();
    bool hasPrediction() const { return m_prediction.has_value(); }
    TimeChartView *latencyChart() const { return m_latency; }

    static constexpr double kHistoryS = 300;
    static constexpr int kRedrawDelayMs = 40;
    static constexpr double kBatchSizeWindowS = 10;

signals:
    void redrawn();

protected:
    void showEvent(QShowEvent *event) override;

private:
    // The builders (charts_view_build.cpp), in the order the constructor calls
    // them.
    void buildLatencyChart();
    void buildThroughputChart();
    void buildUtilizationChart();
    void buildQueueCharts();
    void buildGenerationCharts();
    void buildBatchSizeChart();
    void layOut();

    void scheduleRedraw();
    void redraw();
    void drawGeneration(const charts::WindowPoints &points);
    void drawMarkers(double now);
    void redrawBatchSizes();
    void setUtilizationMode(bool gpu, const QString &gpuName, int cores);
    void showSlos(const GoodputSlos &slos, bool kvBounded);

    struct Prediction {
        std::uint64_t version = 0;
        double fromT = 0; // engine uptime; the marker's time when it arrives
        QString label;
        double p99Ms = 0, ttftP99Ms = 0, tpotP99Ms = 0;
    };
    void drawPrediction(double now);

    ChartHistory m_history;
    std::optional<Prediction> m_prediction;
    std::optional<app::HostSample> m_host;
    double m_windowS = 120;
    bool m_paused = false;
    bool m_gpuMode = false;
    bool m_modeSet = false;
    bool m_generative = false;
    GoodputSlos m_shownSlos{-1, -1, -1};
    int m_kvMode = -1; // 1: KV chart in % of the budget, 0: in tokens (unlimited)
    std::size_t m_redraws = 0;
    int m_largestBatch = 16; // the config's batch limit: the distribution's x range
    QTimer m_redrawTimer;

    TimeChartView *m_latency = nullptr;
    TimeChartView *m_throughput = nullptr;
    TimeChartView *m_utilization = nullptr;
    TimeChartView *m_queue = nullptr;
    TimeChartView *m_padding = nullptr;
    TimeChartView *m_tokens = nullptr;    // TTFT / TPOT
    TimeChartView *m_sequences = nullptr; // running / waiting, KV
    QChartView *m_batchSizes = nullptr;
    QLineSeries *m_batchSizeLine = nullptr;
    QValueAxis *m_batchSizeX = nullptr;
    QValueAxis *m_batchSizeY = nullptr;
};

} // namespace bp::ui
