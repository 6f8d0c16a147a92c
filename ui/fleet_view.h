// The Fleet view: capacity plans and simulated fleets in
// the console. For the picked source (an imported trace or a recorded
// session, the Traces dock's lists) it lists the stored capacity plans
// (`batchpilot plan`, or the Advisor's "Plan replicas") and shows the one
// picked: the replicas each window needs over the trace (a step chart) with
// each router's own minimum next to it — the router's effect — and a table
// of the windows. Below, the per-replica load: for a simulated fleet session
// its replica_figures rows (routed, busy fraction, peak outstanding), else
// the selected window's replicas from the plan (the peak window at first).
//
// For a trace it also lists the stored autoscaler replays (`batchpilot
// autoscale --trace`) and draws the one picked: the replicas
// over time — serving, billed (serving + starting + draining) and wanted —
// with the plan's replicas per window on the same axes and the windows that
// had misses during a cold start marked.
//
// Reads go off the GUI thread (JobTracker) and fetch aggregates only: the
// plans' and autoscaler runs' headlines (json_extract in SQLite, not the
// documents), one plan's document (a window per row: 168 for a week of
// hours), one run's document (its timeline reduced off the GUI thread to
// the points where a line changes, or to the line's envelope when it changes
// more often than a chart can show), one row per replica and the session's
// span. Never a session's requests.
#pragma once

#include "job_tracker.h"
#include "source_picker.h"

#include "engine/store/fleet_store.h"

#include <QList>
#include <QPointF>
#include <QStringList>
#include <QThreadPool>
#include <QWidget>

#include <memory>
#include <optional>

class QBarSet;
class QScatterSeries;
class QStandardItem;
class QComboBox;
class QChartView;
class QHBoxLayout;
class QLabel;
class QPushButton;
class QLineSeries;
class QXYSeries;
class QStandardItemModel;
class QTableView;
class QChart;

namespace bp {
class TraceStore;
}

namespace bp::ui {

class SessionListModel;
class TraceListModel;
struct AutoscaleDrawing;
struct FleetListing;

class FleetView : public QWidget {
    Q_OBJECT
public:
    // `traces` and `sessions` (the Traces dock's lists, may be null) are the
    // sources offered.
    FleetView(std::shared_ptr<TraceStore> store, TraceListModel *traces, SessionListModel *sessions,
              QWidget *parent = nullptr);
    ~FleetView() override;

    enum WindowColumn { Window, Requests, Replicas, Router, P99, Busiest, FirstRouterColumn };
    enum ReplicaColumn { Replica, Routed, Completed, Busy, PeakOutstanding, PeakKv, ReplicaColumns };

    SourcePicker *sourceBox() const { return m_source; }
    QComboBox *planBox() const { return m_plan; }
    QLabel *summaryText() const { return m_summary; }
    QLabel *replicaTitle() const { return m_replicaTitle; }
    QStandardItemModel *windowsModel() const { return m_windows; }
    QStandardItemModel *replicasModel() const { return m_replicas; }
    QTableView *windowsTable() const { return m_windowTable; }
    // The replicas chosen per window (a step: two points a window, x in hours).
    QLineSeries *replicasSeries() const { return m_chosen; }
    // Each searched router's own minimum per window, in the plan's router
    // order: the first a step line (two points a window), the others a
    // point a window where they were found.
    const QList<QXYSeries *> &routerSeries() const { return m_routerLines; }
    QBarSet *busySet() const { return m_busySet; }
    const std::optional<StoredPlan> &plan() const { return m_shown; }

    // The autoscaler replays of the picked trace (newest first; empty for a
    // session).
    QComboBox *autoscaleBox() const { return m_autoscale; }
    QLabel *autoscaleSummary() const { return m_autoscaleSummary; }
    // "Replicas over time" for the picked run, x in autoscaleUnitS() seconds
    // (hours for a span of 2 h or more, as the plan's chart): step lines
    // with a point where the value changes (the envelope past 1600 points:
    // fleet_view_drawing.cpp) — serving (ready), billed (ready +
    // starting + draining), wanted (dashed) — and the plan's replicas per
    // window (two points a window; empty without a plan).
    QLineSeries *autoscaleServingSeries() const { return m_asServing; }
    QLineSeries *autoscaleBilledSeries() const { return m_asBilled; }
    QLineSeries *autoscaleWantedSeries() const { return m_asWanted; }
    QLineSeries *autoscalePlanSeries() const { return m_asPlan; }
    // A point per window with cold-start misses: its middle, its mean billed
    // replicas.
    QScatterSeries *coldMissSeries() const { return m_asColdMisses; }
    // Those windows' cold-start misses, in the series' order (also its points'
    // tooltips).
    const QList<int> &coldMissCounts() const { return m_coldMissCounts; }
    double autoscaleUnitS() const { return m_autoscaleUnitS; }
    std::optional<std::int64_t> autoscaleRunId() const { return m_autoscaleShown; }

public slots:
    // Picks the source (a trace, or a session when `session`) and lists its
    // plans; false when the lists do not hold it.
    bool setSource(bool session, std::int64_t id);
    // Lists the picked source's plans again (after a plan was stored).
    void refresh();
    // Shows the window `row` of the plan's table in the per-replica chart.
    void showWindowLoad(int row);
    // Loads the autoscaler run picked in autoscaleBox().
    void loadAutoscaleRun();

signals:
    void plansListed();
    void planShown(std::int64_t planId);
    void replicasShown();
    void autoscaleRunsListed();
    void autoscaleRunShown(std::int64_t runId);
    void failed(const QString &message);

private:
    // The builders (fleet_view_build.cpp), in the order the constructor calls
    // them.
    QHBoxLayout *buildSourceRow(TraceListModel *traces, QPushButton *&refresh);
    QChartView *buildPlanChart();
    void buildAutoscalePanel();
    QChartView *buildAutoscaleChart();
    QChartView *buildLoadChart();
    void buildTables();
    void layOut(QHBoxLayout *top, QChartView *planView, QChartView *loadView);
    void connectControls(QPushButton *refresh);
    void coldMissHovered(const QPointF &point, bool state);

    void sourceChanged();
    void showListing(FleetListing &listing, bool session, std::int64_t id);
    void listPlans(const std::vector<PlanHeadline> &plans);
    void showFleetReplicas(std::int64_t id, const std::vector<StoredReplica> &replicas, double spanS);
    void clearPlan(bool session, std::int64_t id);
    void loadPlan();
    // A plan's drawing (fleet_view_plan.cpp).
    void showPlan(StoredPlan plan);
    struct PlanPeak {
        int replicas = 0, row = -1,
            unmet = 0; // the peak window's replicas and row; windows not met
    };
    void resetRouterSeries(const nlohmann::json &routers);
    PlanPeak addPlanWindows(const nlohmann::json &windows, const nlohmann::json &routers, double unit,
                            double windowS, int maxReplicas);
    void placePlanSeries(double spanS, double unit, int peak);
    void showReplicas(const QStringList &labels, const QList<double> &busy);
    void listAutoscaleRuns(const std::vector<AutoscaleHeadline> &runs);
    void clearAutoscaleChart();
    void showAutoscaleRun(const AutoscaleDrawing &d);

    std::shared_ptr<TraceStore> m_store;
    SessionListModel *m_sessions;
    QThreadPool m_pool;
    JobTracker m_listJobs{this, &m_pool};
    JobTracker m_planJobs{this, &m_pool};
    JobTracker m_autoscaleJobs{this, &m_pool};
    std::optional<StoredPlan> m_shown;
    bool m_fleetSession = false; // the source has replica_figures rows (shown
                                 // instead of a window's)

    SourcePicker *m_source = nullptr;
    QComboBox *m_plan = nullptr;
    QLabel *m_summary = nullptr, *m_replicaTitle = nullptr;
    QStandardItemModel *m_windows = nullptr, *m_replicas = nullptr;
    QTableView *m_windowTable = nullptr, *m_replicaTable = nullptr;
    QChart *m_planChart = nullptr, *m_loadChart = nullptr;
    QLineSeries *m_chosen = nullptr;
    QList<QXYSeries *> m_routerLines;
    QBarSet *m_busySet = nullptr;

    QComboBox *m_autoscale = nullptr;
    QLabel *m_autoscaleLabel = nullptr, *m_autoscaleSummary = nullptr;
    QWidget *m_autoscalePanel = nullptr;
    QChart *m_autoscaleChart = nullptr;
    QLineSeries *m_asServing = nullptr, *m_asBilled = nullptr, *m_asWanted = nullptr, *m_asPlan = nullptr;
    QScatterSeries *m_asColdMisses = nullptr;
    QList<int> m_coldMissCounts;
    QStringList m_coldMissTips;
    double m_autoscaleUnitS = 1;
    std::optional<std::int64_t> m_autoscaleShown;
};

// A stored autoscaler run's document (`autoscale --trace --json`) made
// ready to draw (any thread): each line's steps, the cold-start markers,
// the summary. InvalidArgument, with what is missing, for a document
// without run.timeline or run.windows.
struct AutoscaleDrawing {
    std::int64_t id = 0;
    double unitS = 1, spanS = 0;                              // x unit (s); the x range in seconds
    QList<QPointF> serving, billed, wanted, plan, coldMisses; // x in units
    QList<int> coldMissCounts;
    QStringList coldMissTips;
    int peak = 0; // the most any line reaches
    QString summary;
};
Result<AutoscaleDrawing> autoscaleDrawing(const StoredAutoscaleRun &run);

// "1 h", "10 min", "30 s".
QString windowLength(double seconds);
// Replica-hours as the view prints them: "12.5", "130".
QString replicaHours(double h);
// A read-only table cell; `value` (Qt::UserRole, right-aligned) when valid.
QStandardItem *fleetCell(const QString &text, const QVariant &value = {});

} // namespace bp::ui
