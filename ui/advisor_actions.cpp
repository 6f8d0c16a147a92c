// What the Advisor dock does with a candidate of its search besides
// verifying it: apply it live on the engine, and plan the replicas it needs
// (AdvisorReplicasPanel, the fleet planner).
#include "advisor_dock.h"

#include "advisor_candidates_model.h"
#include "advisor_replicas_panel.h"
#include "config_change_command.h"

#include <QLabel>
#include <QUndoStack>

namespace bp::ui {

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
