// The Advisor dock: asks the tuner which settings serve a
// recorded trace or session best under an SLO, and applies the answer live.
// The operator picks the source (the Traces dock's lists), the SLO (p99, or
// TTFT p99 + TPOT p99), the objective (goodput | throughput) and a
// calibration (the cost model the simulation charges; without one the dock
// says how to make it). Run searches off the GUI thread (AdvisorSearch) with
// a progress bar and Cancel; the result is a Pareto chart and a table of the
// best candidates. "Apply live" sets the searched knobs of the selected
// candidate (the recommendation when none is selected) on the running
// engine as one config change with origin "advisor" — undoable, and marked
// on the charts like any other change — and emits predictionApplied() so
// the live latency chart can draw the predicted p99 next to the measured.
// "Verify for real" (AdvisorVerifyPanel) replays a window of the source on
// the served model under the candidate and shows predicted vs measured.
// "Plan replicas" (AdvisorReplicasPanel) runs the fleet planner for the
// candidate: the fewest replicas and the router per window of the source.
#pragma once

#include "advisor_search.h"
#include "advisor_verify_panel.h"
#include "source_picker.h"

#include "app/engine_bridge.h"

#include <QWidget>

#include <optional>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLayout;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;
class QUndoStack;

namespace bp::ui {

class AdvisorCandidatesModel;
class AdvisorChart;
class AdvisorReplicasPanel;
class DurationSpinBox;
class SessionListModel;
class TraceListModel;

// What a live apply predicts, for the charts' reference lines.
struct AdvisorPrediction {
    std::uint64_t configVersion = 0; // the applied change's version
    QString label;                   // the candidate's
    double p99Ms = 0;
    double ttftP99Ms = 0; // 0: not a generative prediction
    double tpotP99Ms = 0;
};

class AdvisorDock : public QWidget {
    Q_OBJECT
public:
    // `traces` and `sessions` are the Traces dock's lists (the sources
    // offered); `undo` receives the applied changes. All may outlive the dock.
    AdvisorDock(app::EngineBridge &bridge, std::shared_ptr<TraceStore> store, TraceListModel *traces,
                SessionListModel *sessions, QUndoStack *undo, QWidget *parent = nullptr);
    ~AdvisorDock() override;

    SourcePicker *sourceBox() const { return m_source; }
    QComboBox *sloKindBox() const { return m_sloKind; }
    DurationSpinBox *p99Box() const { return m_p99; }
    DurationSpinBox *ttftBox() const { return m_ttft; }
    DurationSpinBox *tpotBox() const { return m_tpot; }
    QComboBox *objectiveBox() const { return m_objective; }
    QComboBox *calibrationBox() const { return m_calibration; }
    QLabel *calibrationNote() const { return m_calibrationNote; }
    // The selected source's reusable-prefix share (prefix_tokens.h), shown before a search.
    QLabel *prefixShareText() const { return m_prefixShare; }
    QDoubleSpinBox *speedBox() const { return m_speed; }
    QDoubleSpinBox *lengthScaleBox() const { return m_lengthScale; }
    QSpinBox *limitBox() const { return m_limit; }
    QSpinBox *budgetBox() const { return m_budget; }
    QPushButton *runButton() const { return m_run; }
    QPushButton *cancelButton() const { return m_cancel; }
    QPushButton *applyButton() const { return m_apply; }
    QProgressBar *progressBar() const { return m_progress; }
    QLabel *statusText() const { return m_status; }
    QLabel *summaryText() const { return m_summary; }
    QTableView *table() const { return m_table; }
    AdvisorCandidatesModel *candidates() const { return m_model; }
    AdvisorChart *chart() const { return m_chart; }
    AdvisorSearch *search() const { return m_search; }
    AdvisorVerifyPanel *verifyPanel() const { return m_verifyPanel; }
    // "Plan replicas": the fleet planner for the selected candidate.
    AdvisorReplicasPanel *replicasPanel() const { return m_replicas; }
    const std::optional<AdvisorResult> &result() const { return m_result; }

    // The request the form describes; InvalidArgument (the reason shown)
    // when it is incomplete.
    Result<AdvisorRequest> request() const;

public slots:
    void run();
    void cancel();
    // Lists the store's calibrations again (off the GUI thread).
    void refreshCalibrations();
    // Applies the selected candidate (the recommendation when none is).
    void applyLive();
    // Verifies the selected candidate (the recommendation when none is) for
    // real on the served model over the panel's window.
    void verify();
    // Plans the replicas and router per window for the selected candidate
    // (the recommendation when none is) with the fleet planner.
    void planReplicas();

signals:
    void searchFinished();
    void verificationFinished(); // also after a cancel (partial) or a failure
    void calibrationsListed();
    // The source's reusable-prefix share was worked out (off the GUI thread).
    void prefixShareShown();
    // A candidate was applied live; the charts show its prediction.
    void predictionApplied(const bp::ui::AdvisorPrediction &prediction);
    void configApplied(const QString &summary);
    void message(const QString &text);

private:
    // The constructor's parts, in the order the widgets are made (their tab order).
    void addSourceRows(QFormLayout *form, TraceListModel *traces, SessionListModel *sessions);
    void addLoadRow(QFormLayout *form);
    void addSloRows(QFormLayout *form); // and the objective
    void addCalibrationRows(QFormLayout *form);
    void addBudgetRow(QFormLayout *form);
    QLayout *buildRunRow(); // also the status and summary lines
    void buildResults();    // the chart, the table, the verify and replicas panels, Apply
    void layOut(QFormLayout *form, QLayout *runRow);
    void connectForm();
    void connectSearch();

    void updateSloRows();
    void updateButtons();
    void showResult(const AdvisorResult &result);
    void showProblem(const QString &text);
    void updateCalibrationNote();
    void updatePrefixShare();
    const TuneCandidate *selectedCandidate(std::size_t *index) const;

    app::EngineBridge &m_bridge;
    std::shared_ptr<TraceStore> m_store;
    QUndoStack *m_undo;
    QThreadPool m_pool;
    JobTracker m_calibrationJobs{this, &m_pool};
    JobTracker m_shareJobs{this, &m_pool};
    AdvisorSearch *m_search = nullptr;
    std::optional<AdvisorResult> m_result;
    std::vector<Calibration> m_calibrations; // as listed, newest first
    bool m_verifying = false;                // the running job is a verification

    SourcePicker *m_source = nullptr;
    QDoubleSpinBox *m_speed = nullptr;
    QDoubleSpinBox *m_lengthScale = nullptr;
    QSpinBox *m_limit = nullptr;
    QComboBox *m_sloKind = nullptr;
    DurationSpinBox *m_p99 = nullptr, *m_ttft = nullptr, *m_tpot = nullptr;
    QList<QWidget *> m_e2eRows, m_tokenRows;
    QComboBox *m_objective = nullptr;
    QComboBox *m_calibration = nullptr;
    QLabel *m_calibrationNote = nullptr;
    QLabel *m_prefixShare = nullptr;
    QSpinBox *m_budget = nullptr;
    QSpinBox *m_instances = nullptr;
    QPushButton *m_run = nullptr, *m_cancel = nullptr, *m_apply = nullptr;
    QProgressBar *m_progress = nullptr;
    QLabel *m_status = nullptr;
    QLabel *m_summary = nullptr;
    AdvisorChart *m_chart = nullptr;
    QTableView *m_table = nullptr;
    AdvisorCandidatesModel *m_model = nullptr;
    AdvisorVerifyPanel *m_verifyPanel = nullptr;
    AdvisorReplicasPanel *m_replicas = nullptr;
};

} // namespace bp::ui

Q_DECLARE_METATYPE(bp::ui::AdvisorPrediction)
