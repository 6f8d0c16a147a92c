// The Advisor's replicas: after a knob search, "Plan
// replicas" runs the fleet planner (engine/sim/fleet/fleet_plan.h, what
// `batchpilot plan` runs) for the picked candidate — the recommendation, or
// the row selected in the dock's table — over the search's source, SLO,
// rate (the dock's speed) and calibration: the fewest replicas and the
// router per window, searched up to "replicas ≤" with the routers picked.
// It runs on a worker thread with a progress bar (windows planned) and its
// own Cancel (the windows planned so far are kept); the plan is stored in
// the trace database like `batchpilot plan`'s (capacity_plans), so the Fleet
// view lists it (planStored). The planner takes every arrival at its
// recorded length: the dock's "lengths" and "limit" do not apply to it (said
// next to the result when they are set).
#pragma once

#include "advisor_search.h"

#include "engine/sim/fleet/fleet_plan.h"

#include <QWidget>

#include <optional>

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QStandardItemModel;
class QTableView;

namespace bp::ui {

// A finished (or cancelled) plan, as the panel shows it.
struct AdvisorFleetPlan {
    FleetPlan plan;
    nlohmann::json document; // planDocument()
    std::int64_t planId = 0; // stored as capacity plan (0: not stored)
    QString candidate;       // the candidate's label
    QString slo;             // "p99 <= 20 ms"
    bool scaled = false;     // the search scaled lengths or limited arrivals (the plan does not)
};

class AdvisorReplicasPanel : public QWidget {
    Q_OBJECT
public:
    explicit AdvisorReplicasPanel(std::shared_ptr<TraceStore> store, QWidget *parent = nullptr);
    ~AdvisorReplicasPanel() override;

    QSpinBox *maxReplicasBox() const { return m_maxReplicas; }
    QComboBox *routerBox() const { return m_router; }
    QComboBox *windowBox() const { return m_window; }
    QPushButton *planButton() const { return m_plan; }
    QPushButton *cancelButton() const { return m_cancel; }
    QProgressBar *progressBar() const { return m_progress; }
    QLabel *resultText() const { return m_result; }
    QStandardItemModel *windowsModel() const { return m_windows; }
    const std::optional<AdvisorFleetPlan> &fleetPlan() const { return m_last; }
    bool running() const { return m_jobs.isJobRunning(); }

    // The search whose candidates it plans for (null: none yet).
    void setResult(const AdvisorResult *result);
    // The planner's request for candidate `index` of the search, as the
    // form describes it; InvalidArgument (the reason) when it cannot be.
    Result<FleetPlanRequest> request(std::size_t index) const;

public slots:
    // Plans candidate `index` of the search (off the GUI thread).
    void plan(std::size_t index);
    void cancel();

signals:
    void planRequested(); // the button: the dock picks the candidate
    void planFinished();  // also after a cancel or a failure
    // Stored as capacity plan `planId` of a session (else a trace) `sourceId`.
    void planStored(std::int64_t planId, bool session, std::int64_t sourceId);

private:
    void show(const AdvisorFleetPlan &plan);
    void updateButtons();

    std::shared_ptr<TraceStore> m_store;
    std::optional<AdvisorResult> m_source;
    std::optional<AdvisorFleetPlan> m_last;
    QThreadPool m_pool;
    JobTracker m_jobs{this, &m_pool};
    std::shared_ptr<std::atomic<bool>> m_cancelFlag;

    QSpinBox *m_maxReplicas = nullptr;
    QComboBox *m_router = nullptr, *m_window = nullptr;
    QPushButton *m_plan = nullptr, *m_cancel = nullptr;
    QProgressBar *m_progress = nullptr;
    QLabel *m_result = nullptr;
    QStandardItemModel *m_windows = nullptr;
    QTableView *m_table = nullptr;
};

} // namespace bp::ui
