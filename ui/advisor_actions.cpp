// What the Advisor dock does with a candidate of its search: verify it on
// this console's engine (AdvisorVerifyPanel), apply it live on the engine,
// and plan the replicas it needs (AdvisorReplicasPanel, the fleet planner).
#include "advisor_dock.h"

#include "advisor_candidates_model.h"
#include "advisor_replicas_panel.h"
#include "advisor_verify_panel.h"
#include "config_change_command.h"

#include <QItemSelectionModel>
#include <QLabel>
#include <QProgressBar>
#include <QTableView>
#include <QUndoStack>

namespace bp::ui {

const TuneCandidate *AdvisorDock::selectedCandidate(std::size_t *index) const
{
    if (!m_result || m_model->rowCount() == 0)
        return nullptr;
    const QModelIndex current = m_table->selectionModel()->currentIndex();
    const int row = current.isValid() ? current.row() : 0; // row 0 is the recommendation
    if (index && m_model->candidateAt(row) >= 0)
        *index = std::size_t(m_model->candidateAt(row));
    return m_model->candidate(row);
}

void AdvisorDock::verify()
{
    std::size_t index = 0;
    const TuneCandidate *c = selectedCandidate(&index);
    if (!c || m_search->running() || !m_result->run)
        return;
    if (auto w = m_verifyPanel->window(); !w) {
        showProblem(QString::fromStdString(w.status().message()));
        return;
    }
    // The check runs on the model this console serves: the calibration must be of it.
    const std::string served = m_bridge.engine().model().name;
    const Calibration &cal = m_result->run->calibration;
    if (cal.model != served) {
        showProblem(tr("The search used a calibration of %1, but this console serves %2: verify on %1 with "
                       "batchpilot tune --calibration %3 (it loads that model), or calibrate %2.")
                        .arg(QString::fromStdString(cal.model), QString::fromStdString(served))
                        .arg(cal.id));
        return;
    }
    m_status->setStyleSheet({});
    m_status->setText(tr("Planning the verification of %1…").arg(QString::fromStdString(c->label)));
    m_progress->setValue(0);
    m_verifying = true;
    m_verifyPanel->verify(index, m_bridge.engine().backend());
    updateButtons();
}

void AdvisorDock::applyLive()
{
    const TuneCandidate *c = selectedCandidate(nullptr);
    if (!c)
        return;
    // Only the knobs the search moved; the rest stays as it is now (other
    // changes made since the search are kept).
    const BatchingConfig now = m_bridge.engine().config();
    const BatchingConfig target =
        ConfigPatch::fields(c->config, AdvisorSearch::searchedKnobs()).value().appliedTo(now);
    const std::optional<ConfigUpdate> update = m_bridge.applyPatch(
        ConfigPatch::diff(now, target), QString::fromStdString(std::string(kAdvisorOrigin)));
    if (!update) {
        showProblem(
            tr("The engine refused %1 (see the Batching dock)").arg(QString::fromStdString(c->label)));
        return;
    }
    const QString summary = update->version == 0
                                ? tr("the engine already runs %1").arg(QString::fromStdString(c->label))
                                : QString::fromStdString(describeChange(update->before, update->after));
    if (update->version != 0 && m_undo)
        m_undo->push(new ConfigChangeCommand(m_bridge, update->before, update->after));
    AdvisorPrediction p;
    p.configVersion = update->version != 0 ? update->version : m_bridge.engine().snapshot().configVersion;
    p.label = QString::fromStdString(c->label);
    p.p99Ms = c->figures.p99S * 1e3;
    if (m_result->request.slo.tokenLevel() || c->figures.ttftP99S > 0) {
        p.ttftP99Ms = c->figures.ttftP99S * 1e3;
        p.tpotP99Ms = c->figures.tpotP99S * 1e3;
    }
    m_status->setStyleSheet({});
    m_status->setText(tr("Applied %1 live: %2").arg(p.label, summary));
    emit configApplied(summary);
    emit predictionApplied(p);
}

void AdvisorDock::planReplicas()
{
    std::size_t index = 0;
    if (!selectedCandidate(&index) || !m_result || !m_result->run) {
        showProblem(tr("Run a search first: the replicas are planned for one of its configs."));
        return;
    }
    m_replicas->plan(index);
}

} // namespace bp::ui
