#include "main_window.h"

#include "export_settings_menu.h"

#include "advisor_dock.h"
#include "advisor_replicas_panel.h"
#include "batch_timeline.h"
#include "charts_view.h"
#include "compare_view.h"
#include "control_panel.h"
#include "fleet_view.h"
#include "remote_target_view.h"
#include "session_list_model.h"
#include "status_info.h"
#include "trace_list_model.h"
#include "traces_view.h"
#include "traffic_panel.h"

#include "app/nvml_sampler.h"

#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QItemSelectionModel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>
#include <QUndoStack>

#include <algorithm>

namespace bp::ui {

MainWindow::MainWindow(const ConsoleContext &context, QWidget *parent)
    : QMainWindow(parent), m_context(context)
{
    app::EngineBridge &bridge = *context.bridge;
    const ModelInfo &model = bridge.engine().model();
    setWindowTitle(tr("BatchPilot — %1 on %2")
                       .arg(QString::fromStdString(model.name), QString::fromStdString(model.device)));
    setDockOptions(AnimatedDocks | AllowTabbedDocks | AllowNestedDocks);
    buildPages(model);
    buildDocks(bridge);
    m_status = new StatusInfo(context, statusBar());
    createActions();
    connectViews(bridge);
    bridge.startHostSampling(context.nvmlLibrary, app::NvmlSampler::deviceIndexFor(model.device));

    const QRect screen =
        QGuiApplication::primaryScreen() ? QGuiApplication::primaryScreen()->availableGeometry() : QRect();
    resize(screen.isValid() ? screen.size().boundedTo(QSize(1600, 1000)) : QSize(1500, 950));
    m_defaultState = saveState();
    restoreSettings();
}

// The central tabs: Live and Comparison (the Fleet tab comes with the docks).
void MainWindow::buildPages(const ModelInfo &model)
{
    const ConsoleContext &context = m_context;
    m_undo = new QUndoStack(this);
    m_charts = new ChartsView(this);
    m_charts->setGenerative(model.generative); // TTFT/TPOT and sequence charts
    m_compare = new CompareView(context.store, this);
    m_tabs = new QTabWidget(this);
    m_tabs->setDocumentMode(true);
    m_tabs->addTab(m_charts, tr("Live"));
    m_tabs->addTab(m_compare, tr("Comparison"));
    setCentralWidget(m_tabs);
}

// The docks: Batching, Traffic, Batch timeline, Traces, Remote target and
// the Advisor, and the Fleet tab that follows the Traces dock.
void MainWindow::buildDocks(app::EngineBridge &bridge)
{
    const ConsoleContext &context = m_context;
    m_controls = new ControlPanel(bridge, m_undo, this);
    auto *scroll = new QScrollArea(this);
    scroll->setWidget(m_controls);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setMinimumWidth(m_controls->sizeHint().width() + 16);
    addDock(tr("Batching"), QStringLiteral("controls"), scroll, Qt::LeftDockWidgetArea);
    m_traces = new TracesView(bridge, context.store, context.sessionId, context.replayBackend, this);
    m_traffic = new TrafficPanel(bridge, context.store, m_traces->traceModel(), this);
    addDock(tr("Traffic"), QStringLiteral("traffic"), m_traffic, Qt::LeftDockWidgetArea);
    m_timeline = new BatchTimeline(this);
    addDock(tr("Batch timeline"), QStringLiteral("timeline"), m_timeline, Qt::BottomDockWidgetArea);
    QDockWidget *tracesDock =
        addDock(tr("Traces"), QStringLiteral("traces"), m_traces, Qt::BottomDockWidgetArea);
    tabifyDockWidget(m_docks[2], tracesDock);
    auto *remoteView = new RemoteTargetView(context.store, this);
    QDockWidget *remoteDock =
        addDock(tr("Remote target"), QStringLiteral("remote"), remoteView, Qt::BottomDockWidgetArea);
    tabifyDockWidget(m_docks[2], remoteDock);
    connect(m_traffic, &TrafficPanel::remoteSessionStarted, remoteDock, [remoteView, remoteDock](qint64 id) {
        remoteView->follow(id);
        remoteDock->raise();
    });
    m_docks[2]->raise();
    m_advisor = new AdvisorDock(bridge, context.store, m_traces->traceModel(), m_traces->sessionModel(),
                                m_undo, this);
    // The Fleet view offers the Traces dock's lists and follows its selection.
    m_fleet = new FleetView(context.store, m_traces->traceModel(), m_traces->sessionModel(), this);
    m_tabs->addTab(m_fleet, tr("Fleet"));
    m_advisorDock = addDock(tr("Advisor"), QStringLiteral("advisor"), m_advisor, Qt::RightDockWidgetArea);
    m_advisorDock->hide(); // View ▸ Advisor (Alt+5) or the toolbar
    // The right column runs the full height, so the Advisor's chart and
    // table are not squeezed above the Traces dock.
    setCorner(Qt::BottomRightCorner, Qt::RightDockWidgetArea);
    resizeDocks({m_docks[0]}, {320}, Qt::Horizontal);
    resizeDocks({m_docks[0], m_docks[1]}, {560, 330}, Qt::Vertical);
    resizeDocks({m_docks[2]}, {190}, Qt::Vertical);
}

// The engine's snapshots to the views, and the views to each other and the
// status bar.
void MainWindow::connectViews(app::EngineBridge &bridge)
{
    const ConsoleContext &context = m_context;
    connect(&bridge, &app::EngineBridge::snapshotReady, m_charts, &ChartsView::addSnapshot);
    connect(&bridge, &app::EngineBridge::snapshotReady, m_timeline, &BatchTimeline::addSnapshot);
    connect(&bridge, &app::EngineBridge::snapshotReady, m_status, &StatusInfo::refresh);
    connect(&bridge, &app::EngineBridge::hostSampleReady, m_charts, &ChartsView::addHostSample);
    connect(m_traces, &TracesView::compareRequested, this, &MainWindow::compareSessions);
    connect(m_traces, &TracesView::sampleOffered, this, &MainWindow::showTraces); // first run: show the offer
    m_traces->setSampleTracePath(context.sampleTrace);
    connect(m_traces, &TracesView::message, this,
            [this](const QString &m) { statusBar()->showMessage(m, 8000); });
    connect(m_compare, &CompareView::failed, this,
            [this](const QString &m) { statusBar()->showMessage(m, 8000); });
    connect(m_traffic, &TrafficPanel::failed, this,
            [this](const QString &m) { statusBar()->showMessage(m, 8000); });
    connect(m_controls, &ControlPanel::configApplied, this, [this](const QString &summary) {
        statusBar()->showMessage(tr("Applied: %1").arg(summary), 4000);
    });
    connect(m_advisor, &AdvisorDock::predictionApplied, this, [this](const AdvisorPrediction &p) {
        m_charts->setPrediction(p.configVersion, p.label, p.p99Ms, p.ttftP99Ms, p.tpotP99Ms);
        showPage(Page::Live);
    });
    connect(m_advisor, &AdvisorDock::configApplied, this, [this](const QString &summary) {
        statusBar()->showMessage(tr("Advisor applied: %1").arg(summary), 8000);
    });
    connect(m_advisor->replicasPanel(), &AdvisorReplicasPanel::planStored, m_fleet,
            [this](std::int64_t, bool session, std::int64_t source) { m_fleet->setSource(session, source); });
    for (auto [table, session] :
         {std::pair{m_traces->traceTable(), false}, std::pair{m_traces->sessionTable(), true}})
        connect(table->selectionModel(), &QItemSelectionModel::currentRowChanged, m_fleet,
                [this, session](const QModelIndex &current) {
                    if (current.isValid())
                        m_fleet->setSource(session, current.data(Qt::UserRole).toLongLong());
                });
    connect(m_advisor, &AdvisorDock::message, this,
            [this](const QString &m) { statusBar()->showMessage(m, 8000); });
}

MainWindow::~MainWindow() = default;

QDockWidget *MainWindow::addDock(const QString &title, const QString &name, QWidget *widget,
                                 Qt::DockWidgetArea area)
{
    auto *dock = new QDockWidget(title, this);
    dock->setObjectName(name); // saveState() needs it
    dock->setWidget(widget);
    addDockWidget(area, dock);
    m_docks << dock;
    return dock;
}

// The menus in menu-bar order, then the toolbar over their main actions.
void MainWindow::createActions()
{
    ToolbarActions bar;
    bar.import = createFileMenu();
    createEditMenu(bar);
    bar.pause = createViewMenu();
    bar.traffic = createTrafficMenu();
    createTracesMenu();
    createHelpMenu();
    createToolBar(bar);
}

QAction *MainWindow::createFileMenu()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *import = file->addAction(tr("&Import trace…"), QKeySequence(tr("Ctrl+I")), this, [this] {
        showTraces();
        m_traces->chooseAndImport();
    });
    import->setEnabled(m_traces->hasStore());
    file->addAction(tr("&Export session report…"), QKeySequence(tr("Ctrl+E")), this,
                    [this] {
                        showTraces();
                        m_traces->exportSelectedReport();
                    })
        ->setEnabled(m_traces->hasStore());
    auto *exportSettings = new ExportSettingsMenu(*m_context.bridge, this);
    file->addMenu(exportSettings);
    connect(exportSettings, &ExportSettingsMenu::exported, this, [this](const QString &path) {
        statusBar()->showMessage(tr("Settings written to %1").arg(path), 8000);
    });
    connect(exportSettings, &ExportSettingsMenu::exportFailed, this,
            [this](const QString &m) { statusBar()->showMessage(m, 8000); });
    file->addAction(tr("Copy REST &URL"), QKeySequence(tr("Ctrl+Shift+U")), m_status,
                    &StatusInfo::copyRestUrl)
        ->setEnabled(!m_context.restUrl.isEmpty());
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
    return import;
}

void MainWindow::createEditMenu(ToolbarActions &bar)
{
    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    bar.undo = m_undo->createUndoAction(this, tr("&Undo config change"));
    bar.undo->setShortcut(QKeySequence::Undo);
    bar.redo = m_undo->createRedoAction(this, tr("&Redo config change"));
    // The platform's redo keys, plus Ctrl+Y where the platform lacks it (a
    // shortcut listed twice on one action would be ambiguous and never fire).
    QList<QKeySequence> redoKeys = QKeySequence::keyBindings(QKeySequence::Redo);
    if (!redoKeys.contains(QKeySequence(tr("Ctrl+Y"))))
        redoKeys << QKeySequence(tr("Ctrl+Y"));
    bar.redo->setShortcuts(redoKeys);
    edit->addAction(bar.undo);
    edit->addAction(bar.redo);
    edit->addAction(tr("&Apply config now"), QKeySequence(tr("Ctrl+Return")), m_controls,
                    &ControlPanel::applyNow);
    edit->addAction(tr("Re&vert pending edits"), m_controls, &ControlPanel::revertToEngine);
}

QAction *MainWindow::createViewMenu()
{
    QMenu *view = menuBar()->addMenu(tr("&View"));
    view->addAction(tr("&Live charts"), QKeySequence(tr("Ctrl+1")), this, [this] { showPage(Page::Live); });
    view->addAction(tr("&Comparison"), QKeySequence(tr("Ctrl+2")), this, [this] { showPage(Page::Compare); });
    view->addAction(tr("&Fleet (capacity plans)"), QKeySequence(tr("Ctrl+3")), this,
                    [this] { showPage(Page::Fleet); });
    view->addSeparator();
    int n = 1;
    for (QDockWidget *dock : m_docks) {
        QAction *toggle = dock->toggleViewAction();
        toggle->setShortcut(QKeySequence(tr("Alt+%1").arg(n++)));
        view->addAction(toggle);
    }
    view->addSeparator();
    QAction *pause = view->addAction(tr("&Pause charts"));
    pause->setCheckable(true);
    pause->setShortcut(QKeySequence(tr("Ctrl+P")));
    connect(pause, &QAction::toggled, this, [this](bool on) {
        m_charts->setPaused(on);
        m_timeline->setPaused(on);
    });
    createChartWindowMenu(view);
    view->addSeparator();
    view->addAction(tr("&Reset layout"), this, [this] { restoreState(m_defaultState); });
    return pause;
}

void MainWindow::createChartWindowMenu(QMenu *view)
{
    QMenu *window = view->addMenu(tr("Chart &window"));
    m_windowGroup = new QActionGroup(this);
    for (const auto &[label, seconds] : {std::pair{tr("30 seconds"), 30}, std::pair{tr("1 minute"), 60},
                                         std::pair{tr("2 minutes"), 120}, std::pair{tr("5 minutes"), 300}}) {
        QAction *a = window->addAction(label);
        a->setCheckable(true);
        a->setData(seconds);
        a->setChecked(seconds == int(m_charts->window()));
        m_windowGroup->addAction(a);
        connect(a, &QAction::triggered, this, [this, seconds = seconds] { setChartWindow(seconds); });
    }
}

QAction *MainWindow::createTrafficMenu()
{
    QMenu *traffic = menuBar()->addMenu(tr("T&raffic"));
    return traffic->addAction(tr("&Start / stop synthetic traffic"), QKeySequence(tr("Ctrl+T")), m_traffic,
                              &TrafficPanel::toggle);
}

void MainWindow::createTracesMenu()
{
    QMenu *traces = menuBar()->addMenu(tr("T&races"));
    traces->addAction(tr("&Refresh"), QKeySequence::Refresh, m_traces, &TracesView::refresh);
    traces->addAction(tr("Re&play selected session…"), QKeySequence(tr("Ctrl+R")), this, [this] {
        showTraces();
        m_traces->replaySelectedSession();
    });
    traces->addAction(tr("&Compare selected sessions"), QKeySequence(tr("Ctrl+Shift+C")), m_traces,
                      &TracesView::compareSelected);
    traces->addAction(tr("Ca&ncel import or replay"), m_traces, &TracesView::cancelJob);
    traces
        ->addAction(tr("Import the &sample trace"), this,
                    [this] {
                        showTraces();
                        m_traces->importFile(m_context.sampleTrace);
                    })
        ->setEnabled(m_traces->hasStore() && !m_context.sampleTrace.isEmpty());
}

void MainWindow::createHelpMenu()
{
    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Keyboard shortcuts"), QKeySequence::HelpContents, this, &MainWindow::showShortcuts);
    help->addAction(tr("&About BatchPilot"), this, [this] {
        QMessageBox::about(this, tr("About BatchPilot"),
                           tr("<b>BatchPilot %1</b><p>Live batching console for transformer inference.</p>")
                               .arg(QCoreApplication::applicationVersion()));
    });
}

void MainWindow::createToolBar(const ToolbarActions &actions)
{
    QToolBar *bar = addToolBar(tr("Main"));
    bar->setObjectName(QStringLiteral("mainToolBar"));
    bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    QAction *toggleTraffic = actions.traffic;
    toggleTraffic->setCheckable(true);
    toggleTraffic->setText(tr("Traffic"));
    toggleTraffic->setToolTip(tr("Start or stop synthetic traffic (Ctrl+T)"));
    connect(m_traffic, &TrafficPanel::runningChanged, toggleTraffic, &QAction::setChecked);
    bar->addAction(toggleTraffic);
    bar->addSeparator();
    bar->addAction(actions.undo);
    bar->addAction(actions.redo);
    bar->addSeparator();
    bar->addAction(actions.pause);
    bar->addActions(m_windowGroup->actions());
    bar->addSeparator();
    bar->addAction(actions.import);
    QAction *advisor = m_advisorDock->toggleViewAction();
    advisor->setToolTip(tr("Show or hide the Advisor: tune the knobs for a recorded load (Alt+5)"));
    bar->addAction(advisor);
}

void MainWindow::showPage(Page page)
{
    m_tabs->setCurrentWidget(page == Page::Live      ? static_cast<QWidget *>(m_charts)
                             : page == Page::Compare ? static_cast<QWidget *>(m_compare)
                                                     : m_fleet);
}

void MainWindow::showTraces()
{
    QDockWidget *dock = m_docks[3];
    dock->show();
    dock->raise();
}

void MainWindow::showAdvisor()
{
    if (m_advisorDock->isHidden() && !m_advisorDock->isFloating()) {
        m_advisorDock->show();
        resizeDocks({m_advisorDock}, {std::max(560, width() * 2 / 5)}, Qt::Horizontal);
    }
    m_advisorDock->raise();
}

void MainWindow::compareSessions(std::int64_t a, std::int64_t b)
{
    showPage(Page::Compare);
    m_compare->compare(a, b);
}

void MainWindow::setChartWindow(double seconds)
{
    m_charts->setWindow(seconds);
    for (QAction *a : m_windowGroup->actions())
        a->setChecked(a->data().toInt() == int(seconds));
}

void MainWindow::showShortcuts()
{
    QMessageBox::information(
        this, tr("Keyboard shortcuts"),
        tr("<table cellspacing=4>"
           "<tr><td><b>Ctrl+Z</b> / <b>Ctrl+Shift+Z</b></td><td>undo / redo the last config change</td></tr>"
           "<tr><td><b>Ctrl+Return</b></td><td>apply edits now (skip the 300 ms debounce)</td></tr>"
           "<tr><td><b>Esc</b></td><td>drop edits that are pending or were refused</td></tr>"
           "<tr><td><b>Ctrl+T</b></td><td>start / stop synthetic traffic</td></tr>"
           "<tr><td><b>Ctrl+P</b></td><td>pause the charts and the timeline</td></tr>"
           "<tr><td><b>Ctrl+1</b> / <b>Ctrl+2</b> / <b>Ctrl+3</b></td><td>live charts / comparison / "
           "fleet</td></tr>"
           "<tr><td><b>Alt+1…5</b></td><td>show or hide the Batching, Traffic, Timeline, Traces, "
           "Advisor docks</td></tr>"
           "<tr><td><b>Ctrl+I</b></td><td>import a CSV trace</td></tr>"
           "<tr><td><b>Ctrl+R</b></td><td>replay the selected session</td></tr>"
           "<tr><td><b>Ctrl+Shift+C</b></td><td>compare the selected sessions</td></tr>"
           "<tr><td><b>F5</b></td><td>refresh traces and sessions</td></tr>"
           "<tr><td><b>Ctrl+Shift+U</b></td><td>copy the REST URL</td></tr>"
           "</table>"));
}

void MainWindow::restoreSettings()
{
    QSettings s;
    s.beginGroup(QStringLiteral("mainWindow"));
    restoreGeometry(s.value(QStringLiteral("geometry")).toByteArray());
    restoreState(s.value(QStringLiteral("state")).toByteArray());
    setChartWindow(s.value(QStringLiteral("chartWindowS"), 120).toDouble());
    m_tabs->setCurrentIndex(s.value(QStringLiteral("page"), 0).toInt());
    s.endGroup();
    m_traffic->restoreSettings(s);
}

void MainWindow::saveSettings() const
{
    QSettings s;
    s.beginGroup(QStringLiteral("mainWindow"));
    s.setValue(QStringLiteral("geometry"), saveGeometry());
    s.setValue(QStringLiteral("state"), saveState());
    s.setValue(QStringLiteral("chartWindowS"), m_charts->window());
    s.setValue(QStringLiteral("page"), m_tabs->currentIndex());
    s.endGroup();
    m_traffic->saveSettings(s);
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    saveSettings();
    m_traffic->shutdown(); // the process must not wait for a slow server's answers
    event->accept();
}

} // namespace bp::ui
