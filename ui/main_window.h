// The operations console: live charts (central, with the session comparison
// and the Fleet view of capacity plans as further tabs), docks for the batching controls, synthetic traffic,
// the batch timeline and the trace store, plus menus, a toolbar, shortcuts and a status bar. The Advisor dock
// (hidden at first) tunes the knobs for a recorded load in simulation and applies the answer live. Layout,
// chart window and traffic settings persist in QSettings. The window only ever receives engine state as
// snapshot values.
#pragma once

#include "console_context.h"

#include <QMainWindow>

class QAction;
class QActionGroup;
class QDockWidget;
class QMenu;
class QTabWidget;
class QUndoStack;

namespace bp::ui {

class AdvisorDock;
class BatchTimeline;
class ChartsView;
class CompareView;
class FleetView;
class ControlPanel;
class StatusInfo;
class TracesView;
class TrafficPanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(const ConsoleContext &context, QWidget *parent = nullptr);
    ~MainWindow() override;

    ControlPanel *controlPanel() const { return m_controls; }
    TrafficPanel *trafficPanel() const { return m_traffic; }
    ChartsView *chartsView() const { return m_charts; }
    BatchTimeline *batchTimeline() const { return m_timeline; }
    TracesView *tracesView() const { return m_traces; }
    CompareView *compareView() const { return m_compare; }
    FleetView *fleetView() const { return m_fleet; }
    QUndoStack *undoStack() const { return m_undo; }
    StatusInfo *statusInfo() const { return m_status; }
    AdvisorDock *advisor() const { return m_advisor; }

    enum class Page { Live, Compare, Fleet };
    void showPage(Page page);
    // Raises the traces dock (and shows it if it was closed).
    void showTraces();
    // Shows and raises the Advisor dock.
    void showAdvisor();
    void compareSessions(std::int64_t a, std::int64_t b);

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    QDockWidget *addDock(const QString &title, const QString &name, QWidget *widget, Qt::DockWidgetArea area);
    // The actions the toolbar shows besides the chart windows and the Advisor.
    struct ToolbarActions {
        QAction *import = nullptr, *undo = nullptr, *redo = nullptr, *pause = nullptr, *traffic = nullptr;
    };
    void createActions();
    // The constructor's parts, in the order it calls them.
    void buildPages(const ModelInfo &model);
    void buildDocks(app::EngineBridge &bridge);
    void connectViews(app::EngineBridge &bridge);
    QAction *createFileMenu(); // returns Import trace
    void createEditMenu(ToolbarActions &bar);
    QAction *createViewMenu(); // returns Pause charts
    void createChartWindowMenu(QMenu *view);
    QAction *createTrafficMenu(); // returns Start / stop
    void createTracesMenu();
    void createHelpMenu();
    void createToolBar(const ToolbarActions &actions);
    void restoreSettings();
    void saveSettings() const;
    void setChartWindow(double seconds);
    void showShortcuts();

    ConsoleContext m_context;
    QUndoStack *m_undo = nullptr;
    QTabWidget *m_tabs = nullptr;
    ChartsView *m_charts = nullptr;
    CompareView *m_compare = nullptr;
    FleetView *m_fleet = nullptr;
    ControlPanel *m_controls = nullptr;
    TrafficPanel *m_traffic = nullptr;
    BatchTimeline *m_timeline = nullptr;
    TracesView *m_traces = nullptr;
    StatusInfo *m_status = nullptr;
    AdvisorDock *m_advisor = nullptr;
    QDockWidget *m_advisorDock = nullptr;
    QList<QDockWidget *> m_docks;
    QActionGroup *m_windowGroup = nullptr;
    QByteArray m_defaultState;
};

} // namespace bp::ui
