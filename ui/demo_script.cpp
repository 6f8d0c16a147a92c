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
#include <QHash>
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
    using Step = bool (DemoScript::*)(const QString &);
    static const QHash<QString, Step> steps = {
        {QStringLiteral("wait"), &DemoScript::stepWait},
        {QStringLiteral("traffic"), &DemoScript::stepTraffic},
        {QStringLiteral("set"), &DemoScript::stepSet},
        {QStringLiteral("lengths"), &DemoScript::stepLengths},
        {QStringLiteral("new_tokens"), &DemoScript::stepNewTokens},
        {QStringLiteral("target"), &DemoScript::stepTarget},
        {QStringLiteral("window"), &DemoScript::stepWindow},
        {QStringLiteral("show"), &DemoScript::stepShow},
        {QStringLiteral("import"), &DemoScript::stepImport},
        {QStringLiteral("replay"), &DemoScript::stepReplay},
        {QStringLiteral("compare"), &DemoScript::stepCompare},
        {QStringLiteral("select"), &DemoScript::stepSelect},
        {QStringLiteral("hide"), &DemoScript::stepHide},
        {QStringLiteral("advise"), &DemoScript::advise},
        {QStringLiteral("fleet"), &DemoScript::stepFleet},
        {QStringLiteral("screenshot"), &DemoScript::stepScreenshot},
        {QStringLiteral("quit"), &DemoScript::stepQuit},
    };
    const auto step = steps.constFind(command);
    if (step == steps.cend()) {
        fail(QStringLiteral("unknown step '%1'").arg(command));
        return false;
    }
    return (this->*step.value())(argument);
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
