// The steps of a demo script (demo_script.h lists them), one function each.
#include "demo_script.h"

#include "advisor_dock.h"
#include "batch_timeline.h"
#include "bucket_edges_editor.h"
#include "bucket_edges_model.h"
#include "charts_view.h"
#include "compare_view.h"
#include "control_panel.h"
#include "duration_spin_box.h"
#include "fleet_view.h"
#include "knob_form.h"
#include "main_window.h"
#include "remote_target_form.h"
#include "session_list_model.h"
#include "trace_importer.h"
#include "trace_list_model.h"
#include "traces_view.h"
#include "traffic_panel.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPixmap>
#include <QPushButton>
#include <QSpinBox>
#include <QTableView>
#include <QTextStream>

namespace bp::ui {

bool DemoScript::stepWait(const QString &argument)
{
    QTimer::singleShot(int(argument.toDouble() * 1000), this, &DemoScript::next);
    return false;
}

bool DemoScript::stepTraffic(const QString &argument)
{
    TrafficPanel *traffic = m_window.trafficPanel();
    if (argument == QLatin1String("off")) {
        traffic->stop();
    } else {
        traffic->stop();
        traffic->rateBox()->setValue(argument.toDouble());
        traffic->start();
    }
    return true;
}

bool DemoScript::stepSet(const QString &argument)
{
    ControlPanel *panel = m_window.controlPanel();
    const QString field = argument.section(QLatin1Char(':'), 0, 0);
    const QString value = argument.section(QLatin1Char(':'), 1);
    if (field == QLatin1String("policy"))
        panel->policyBox()->setCurrentIndex(panel->policyBox()->findText(value));
    else if (field == QLatin1String("max_batch_size"))
        panel->maxBatchSizeBox()->setValue(value.toInt());
    else if (field == QLatin1String("max_queue_delay"))
        panel->queueDelayBox()->setValueUs(DurationSpinBox::parse(value, 1000).value_or(0));
    else if (field == QLatin1String("static_batch_size"))
        panel->staticBatchSizeBox()->setValue(value.toInt());
    else if (field == QLatin1String("static_padded_length"))
        panel->staticPaddedLengthBox()->setValue(value.toInt());
    else if (field == QLatin1String("instances"))
        panel->instancesBox()->setValue(value.toInt());
    else if (field == QLatin1String("queue_capacity"))
        panel->queueCapacityBox()->setValue(value.toInt());
    else if (field == QLatin1String("bucket_edges")) {
        std::vector<int> edges;
        for (const QString &e : value.split(QLatin1Char(',')))
            edges.push_back(e.toInt());
        panel->bucketEdgesEditor()->model()->setEdges(edges);
    } else if (!setKnob(field, value)) {
        fail(QStringLiteral("unknown knob '%1' or bad value '%2'").arg(field, value));
        return false;
    }
    panel->applyNow();
    return true;
}

// embedded | URL,PROTOCOL,MODEL
bool DemoScript::stepTarget(const QString &argument)
{
    TrafficPanel *traffic = m_window.trafficPanel();
    if (argument == QLatin1String("embedded")) {
        traffic->targetBox()->setCurrentIndex(0);
        return true;
    }
    const QStringList parts = argument.split(QLatin1Char(','));
    RemoteTargetForm *form = traffic->remoteForm();
    const int protocol = parts.size() == 3 ? form->protocolBox()->findData(parts[1]) : -1;
    if (protocol < 0) {
        fail(QStringLiteral("target expects 'embedded' or URL,PROTOCOL,MODEL (protocol oip, openai or "
                            "openai-chat), got '%1'")
                 .arg(argument));
        return false;
    }
    traffic->targetBox()->setCurrentIndex(1);
    form->urlEdit()->setText(parts[0]);
    form->protocolBox()->setCurrentIndex(protocol);
    form->modelEdit()->setText(parts[2]);
    return true;
}

bool DemoScript::stepWindow(const QString &argument)
{
    m_window.chartsView()->setWindow(argument.toDouble());
    return true;
}

bool DemoScript::stepShow(const QString &argument)
{
    if (argument == QLatin1String("live"))
        m_window.showPage(MainWindow::Page::Live);
    else if (argument == QLatin1String("compare"))
        m_window.showPage(MainWindow::Page::Compare);
    else if (argument == QLatin1String("fleet"))
        m_window.showPage(MainWindow::Page::Fleet);
    else if (argument == QLatin1String("traces"))
        m_window.showTraces();
    else if (argument == QLatin1String("timeline"))
        m_window.batchTimeline()->parentWidget()->raise();
    return true;
}

bool DemoScript::stepImport(const QString &argument)
{
    TracesView *traces = m_window.tracesView();
    m_done = connect(traces->importer(), &TraceImporter::imported, this,
                     [this, traces] { continueAfterRefresh(traces); });
    m_failed =
        connect(traces->importer(), &TraceImporter::failed, this, [this](const QString &why) { fail(why); });
    traces->importFile(argument);
    return false;
}

bool DemoScript::stepReplay(const QString &argument)
{
    ControlPanel *panel = m_window.controlPanel();
    TracesView *traces = m_window.tracesView();
    const QStringList parts = argument.split(QLatin1Char(':'));
    ReplayOptions options;
    const bool trace = parts.value(0) == QLatin1String("trace");
    options.source.kind = trace ? ReplaySource::Kind::Trace : ReplaySource::Kind::Session;
    if (parts.value(1) == QLatin1String("latest")) {
        const auto &rows =
            trace ? traces->traceModel()->traces().size() : traces->sessionModel()->sessions().size();
        if (rows == 0) {
            fail(QStringLiteral("nothing to replay yet"));
            return false;
        }
        options.source.id =
            trace ? traces->traceModel()->traces().front().id : traces->sessionModel()->sessions().front().id;
    } else {
        options.source.id = parts.value(1).toLongLong();
    }
    options.speed = parts.size() > 2 ? parts[2].toDouble() : 1.0;
    options.clock = parts.value(3) == QLatin1String("virtual") ? ReplayClock::Virtual : ReplayClock::Real;
    options.config = panel->formConfig();
    m_done = connect(traces->replayRunner(), &ReplayRunner::finished, this,
                     [this, traces](const ReplayOutcome &o) {
                         m_lastReplay = o.sessionId;
                         continueAfterRefresh(traces);
                     });
    m_failed = connect(traces->replayRunner(), &ReplayRunner::failed, this,
                       [this](const QString &why) { fail(why); });
    traces->replay(options);
    return false;
}

bool DemoScript::stepCompare(const QString &argument)
{
    TracesView *traces = m_window.tracesView();
    std::int64_t a = 0, b = 0;
    if (argument == QLatin1String("last-replay")) {
        const SessionListModel *sessions = traces->sessionModel();
        const int row = sessions->rowOf(m_lastReplay);
        if (row < 0 || !sessions->sessions()[std::size_t(row)].sourceSessionId) {
            fail(QStringLiteral("no replay of a session to compare yet"));
            return false;
        }
        a = *sessions->sessions()[std::size_t(row)].sourceSessionId;
        b = m_lastReplay;
    } else {
        a = argument.section(QLatin1Char(','), 0, 0).toLongLong();
        b = argument.section(QLatin1Char(','), 1, 1).toLongLong();
    }
    m_done = connect(m_window.compareView(), &CompareView::compared, this,
                     [this] { continueAfter(m_done, m_failed); });
    m_failed = connect(m_window.compareView(), &CompareView::failed, this,
                       [this](const QString &why) { fail(why); });
    m_window.compareSessions(a, b);
    return false;
}

bool DemoScript::stepSelect(const QString &argument)
{
    TracesView *traces = m_window.tracesView();
    const bool trace = argument.startsWith(QLatin1String("trace"));
    const QString which = argument.section(QLatin1Char(':'), 1);
    m_done = connect(traces, &TracesView::refreshed, this, [this, traces, trace, which] {
        QTableView *table = trace ? traces->traceTable() : traces->sessionTable();
        const std::int64_t id = which == QLatin1String("latest")
                                    ? table->model()->index(0, 0).data(Qt::UserRole).toLongLong()
                                : which == QLatin1String("last-replay") ? m_lastReplay
                                                                        : which.toLongLong();
        const int row = trace ? traces->traceModel()->rowOf(id) : traces->sessionModel()->rowOf(id);
        if (row >= 0)
            table->selectRow(row);
        continueAfter(m_done, m_failed);
    });
    traces->refresh();
    return false;
}

// A dock by its name: controls, traffic, timeline, traces, remote, advisor.
bool DemoScript::stepHide(const QString &argument)
{
    auto *dock = m_window.findChild<QDockWidget *>(argument);
    if (!dock) {
        fail(QStringLiteral("no dock '%1'").arg(argument));
        return false;
    }
    dock->hide();
    return true;
}

// trace:latest, trace:ID, session:ID, session:last-replay
bool DemoScript::stepFleet(const QString &argument)
{
    TracesView *traces = m_window.tracesView();
    FleetView *fleet = m_window.fleetView();
    const bool session = argument.startsWith(QLatin1String("session"));
    const QString which = argument.section(QLatin1Char(':'), 1);
    const std::size_t count =
        session ? traces->sessionModel()->sessions().size() : traces->traceModel()->traces().size();
    std::int64_t id = which == QLatin1String("last-replay") ? m_lastReplay : which.toLongLong();
    if (which == QLatin1String("latest") && count > 0)
        id = session ? traces->sessionModel()->sessions().front().id
                     : traces->traceModel()->traces().front().id;
    m_window.showPage(MainWindow::Page::Fleet);
    m_done = connect(fleet, &FleetView::plansListed, this, [this, fleet] {
        if (fleet->planBox()->count() == 0 ||
            (fleet->plan() && fleet->plan()->id == fleet->planBox()->currentData().toLongLong()))
            continueAfter(m_done, m_failed);
    });
    m_failed = connect(fleet, &FleetView::planShown, this, [this] { continueAfter(m_done, m_failed); });
    if (!fleet->setSource(session, id)) {
        fail(QStringLiteral("no such source in the fleet view"));
        return false;
    }
    return false;
}

bool DemoScript::stepScreenshot(const QString &argument)
{
    if (!m_window.grab().save(argument)) {
        fail(QStringLiteral("cannot write %1").arg(argument));
        return false;
    }
    return true;
}

bool DemoScript::stepQuit(const QString &)
{
    m_window.close();
    QTimer::singleShot(0, qApp, &QApplication::quit);
    return true;
}

bool DemoScript::stepLengths(const QString &argument)
{
    TrafficPanel *traffic = m_window.trafficPanel();
    if (argument.contains(QLatin1Char('-'))) {
        traffic->lengthsBox()->setCurrentIndex(traffic->lengthsBox()->findText(QStringLiteral("uniform")));
        traffic->minLengthBox()->setValue(argument.section(QLatin1Char('-'), 0, 0).toInt());
        traffic->maxLengthBox()->setValue(argument.section(QLatin1Char('-'), 1).toInt());
    } else {
        traffic->lengthsBox()->setCurrentIndex(traffic->lengthsBox()->findText(QStringLiteral("fixed")));
        traffic->fixedLengthBox()->setValue(argument.toInt());
    }
    return true;
}

bool DemoScript::stepNewTokens(const QString &argument)
{
    m_window.trafficPanel()->maxNewTokensBox()->setValue(argument.toInt());
    return true;
}

} // namespace bp::ui
