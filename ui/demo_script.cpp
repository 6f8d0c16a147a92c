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

DemoScript::DemoScript(MainWindow &window, const QString &script) : QObject(&window), m_window(window)
{
    for (const QString &step : script.split(QLatin1Char(';'), Qt::SkipEmptyParts))
        m_steps << step.trimmed();
}

void DemoScript::start()
{
    QTimer::singleShot(0, this, &DemoScript::next);
}

void DemoScript::fail(const QString &message)
{
    QTextStream(stderr) << "demo: step " << (m_index) << " '" << m_steps.value(m_index - 1)
                        << "': " << message << "\n";
    m_index = int(m_steps.size());
    emit finished();
    // A scripted run that cannot go on ends instead of waiting for a person.
    QTimer::singleShot(0, &m_window, &QWidget::close);
}

void DemoScript::next()
{
    while (m_index < m_steps.size()) {
        const QString step = m_steps[m_index++];
        const int eq = step.indexOf(QLatin1Char('='));
        const QString command = eq < 0 ? step : step.left(eq);
        const QString argument = eq < 0 ? QString() : step.mid(eq + 1);
        QTextStream(stderr) << "demo: " << step << "\n";
        if (!run(command, argument))
            return; // resumes from a timer or a signal
    }
    emit finished();
}

void DemoScript::continueAfter(QMetaObject::Connection &a, QMetaObject::Connection &b)
{
    disconnect(a);
    disconnect(b);
    QTimer::singleShot(0, this, &DemoScript::next);
}

void DemoScript::continueAfterRefresh(TracesView *traces)
{
    // The lists reload after an import or a replay (TracesView reacts to the
    // same signal first: it connected first); a following "latest" or
    // "last-replay" step must see the new row.
    disconnect(m_done);
    m_done = connect(traces, &TracesView::refreshed, this, [this] { continueAfter(m_done, m_failed); });
}

bool DemoScript::setKnob(const QString &key, const QString &value)
{
    QWidget *editor = m_window.controlPanel()->knobForm()->editor(key.toStdString());
    if (auto *d = qobject_cast<DurationSpinBox *>(editor)) {
        const auto us = DurationSpinBox::parse(value, 1000);
        if (us)
            d->setValueUs(*us);
        return us.has_value();
    }
    if (auto *i = qobject_cast<QSpinBox *>(editor))
        i->setValue(value.toInt());
    else if (auto *x = qobject_cast<QDoubleSpinBox *>(editor))
        x->setValue(value.toDouble());
    else if (auto *c = qobject_cast<QCheckBox *>(editor))
        c->setChecked(value == QLatin1String("1") || value == QLatin1String("true"));
    else if (auto *g = qobject_cast<QGroupBox *>(editor))
        g->setChecked(value == QLatin1String("1") || value == QLatin1String("true"));
    else
        return false;
    return true;
}

bool DemoScript::run(const QString &command, const QString &argument)
{
    ControlPanel *panel = m_window.controlPanel();
    TracesView *traces = m_window.tracesView();
    if (command == QLatin1String("wait")) {
        QTimer::singleShot(int(argument.toDouble() * 1000), this, &DemoScript::next);
        return false;
    }
    if (command == QLatin1String("traffic")) {
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
    if (command == QLatin1String("set")) {
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
    if (command == QLatin1String("lengths") || command == QLatin1String("new_tokens")) {
        TrafficPanel *traffic = m_window.trafficPanel();
        if (command == QLatin1String("new_tokens")) {
            traffic->maxNewTokensBox()->setValue(argument.toInt());
        } else if (argument.contains(QLatin1Char('-'))) {
            traffic->lengthsBox()->setCurrentIndex(
                traffic->lengthsBox()->findText(QStringLiteral("uniform")));
            traffic->minLengthBox()->setValue(argument.section(QLatin1Char('-'), 0, 0).toInt());
            traffic->maxLengthBox()->setValue(argument.section(QLatin1Char('-'), 1).toInt());
        } else {
            traffic->lengthsBox()->setCurrentIndex(traffic->lengthsBox()->findText(QStringLiteral("fixed")));
            traffic->fixedLengthBox()->setValue(argument.toInt());
        }
        return true;
    }
    if (command == QLatin1String("target")) { // embedded | URL,PROTOCOL,MODEL
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
    if (command == QLatin1String("window")) {
        m_window.chartsView()->setWindow(argument.toDouble());
        return true;
    }
    if (command == QLatin1String("show")) {
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
    if (command == QLatin1String("import")) {
        m_done = connect(traces->importer(), &TraceImporter::imported, this,
                         [this, traces] { continueAfterRefresh(traces); });
        m_failed = connect(traces->importer(), &TraceImporter::failed, this,
                           [this](const QString &why) { fail(why); });
        traces->importFile(argument);
        return false;
    }
    if (command == QLatin1String("replay")) {
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
            options.source.id = trace ? traces->traceModel()->traces().front().id
                                      : traces->sessionModel()->sessions().front().id;
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
    if (command == QLatin1String("compare")) {
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
    if (command == QLatin1String("select")) {
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
    if (command ==
        QLatin1String("hide")) { // a dock by its name: controls, traffic, timeline, traces, remote, advisor
        auto *dock = m_window.findChild<QDockWidget *>(argument);
        if (!dock) {
            fail(QStringLiteral("no dock '%1'").arg(argument));
            return false;
        }
        dock->hide();
        return true;
    }
    if (command == QLatin1String("advise"))
        return advise(argument);
    if (command == QLatin1String("fleet")) { // trace:latest, trace:ID, session:ID, session:last-replay
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
    if (command == QLatin1String("screenshot")) {
        if (!m_window.grab().save(argument)) {
            fail(QStringLiteral("cannot write %1").arg(argument));
            return false;
        }
        return true;
    }
    if (command == QLatin1String("quit")) {
        m_window.close();
        QTimer::singleShot(0, qApp, &QApplication::quit);
        return true;
    }
    fail(QStringLiteral("unknown step '%1'").arg(command));
    return false;
}

bool DemoScript::advise(const QString &argument)
{
    AdvisorDock *advisor = m_window.advisor();
    m_window.showAdvisor();
    const QString key = argument.section(QLatin1Char(':'), 0, 0);
    const QString value = argument.section(QLatin1Char(':'), 1);
    if (key == QLatin1String("source")) { // trace:latest, session:ID, ...
        const int kind = value.section(QLatin1Char(':'), 0, 0) == QLatin1String("trace") ? 0 : 1;
        const QString which = value.section(QLatin1Char(':'), 1);
        QComboBox *box = advisor->sourceBox();
        for (int i = 0; i < box->count(); ++i) {
            if (box->itemData(i, Qt::UserRole + 1).toInt() != kind)
                continue;
            if (which == QLatin1String("latest") || box->itemData(i).toLongLong() == which.toLongLong()) {
                box->setCurrentIndex(i);
                return true;
            }
        }
        fail(QStringLiteral("no such source in the advisor"));
        return false;
    }
    if (key == QLatin1String("speed"))
        advisor->speedBox()->setValue(value.toDouble());
    else if (key == QLatin1String("length_scale"))
        advisor->lengthScaleBox()->setValue(value.toDouble());
    else if (key == QLatin1String("limit"))
        advisor->limitBox()->setValue(value.toInt());
    else if (key == QLatin1String("budget"))
        advisor->budgetBox()->setValue(value.toInt());
    else if (key == QLatin1String("objective"))
        advisor->objectiveBox()->setCurrentIndex(value == QLatin1String("throughput") ? 1 : 0);
    else if (key == QLatin1String("slo")) { // as batchpilot tune --slo
        const auto slo = parseTuneSlo(value.toStdString());
        if (!slo) {
            fail(QString::fromStdString(slo.status().message()));
            return false;
        }
        advisor->sloKindBox()->setCurrentIndex(slo->tokenLevel() ? 1 : 0);
        auto us = [](Duration d) {
            return qint64(std::chrono::duration_cast<std::chrono::microseconds>(d).count());
        };
        if (slo->e2eP99 > Duration::zero())
            advisor->p99Box()->setValueUs(us(slo->e2eP99));
        if (slo->ttftP99 > Duration::zero())
            advisor->ttftBox()->setValueUs(us(slo->ttftP99));
        if (slo->tpotP99 > Duration::zero())
            advisor->tpotBox()->setValueUs(us(slo->tpotP99));
    } else if (key == QLatin1String("run")) {
        if (!advisor->runButton()->isEnabled()) {
            fail(QStringLiteral("the advisor cannot run: %1").arg(advisor->calibrationNote()->text()));
            return false;
        }
        m_done =
            connect(advisor, &AdvisorDock::searchFinished, this, [this] { continueAfter(m_done, m_failed); });
        advisor->run();
        return false;
    } else if (key == QLatin1String("select")) {
        advisor->table()->selectRow(value.toInt());
    } else if (key == QLatin1String("apply")) {
        advisor->applyLive();
    } else {
        fail(QStringLiteral("unknown advisor step '%1'").arg(key));
        return false;
    }
    return true;
}

} // namespace bp::ui
