// The Advisor's inputs: the reusable prefix of the source picked (the
// Traces dock's lists, source_picker.h), the SLO rows, the calibrations
// (with what the dock says about them: none, none of the served model, or
// one measured on a busy machine) and the request the form describes.
#include "advisor_dock.h"

#include "duration_spin_box.h"
#include "source_picker.h"

#include "engine/sim/calibration/calibration_store.h"
#include "engine/workload/prefix_tokens.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QSpinBox>
#include <QThread>

#include <algorithm>

namespace bp::ui {

void AdvisorDock::updatePrefixShare()
{
    const std::optional<ReplaySource> picked = m_source->source();
    if (!m_store || !picked) {
        m_prefixShare->clear();
        return;
    }
    const ReplaySource source = *picked;
    m_prefixShare->setText(tr("Reusable prefix: …"));
    m_shareJobs.startJob(
        [store = m_store, source](const JobTracker::Ticket &) -> Result<PrefixShare> {
            if (source.kind == ReplaySource::Kind::Session) {
                auto rows = store->sessionArrivals(source.id); // conversations, no hash ids
                if (!rows)
                    return rows.status();
                return prefixShare(*rows, {}, kPrefixBlockTokens);
            }
            auto info = store->trace(source.id);
            auto rows = store->traceRows(source.id);
            auto ids = store->traceHashIds(source.id);
            for (const Status &s : {info.status(), rows.status(), ids.status()})
                if (!s)
                    return s;
            return prefixShare(*rows, *ids, info->blockTokens > 0 ? info->blockTokens : kPrefixBlockTokens);
        },
        [this](Result<PrefixShare> share) {
            if (!share)
                m_prefixShare->setText(QString::fromStdString(share.status().message()));
            else
                m_prefixShare->setText(
                    share->reusableTokens
                        ? tr("Reusable prefix: %1% of the prompt tokens (%2 of %3) are in blocks seen before "
                             "— what a prefix cache could serve")
                              .arg(100.0 * share->share(), 0, 'f', 1)
                              .arg(share->reusableTokens)
                              .arg(share->promptTokens)
                        : tr("Reusable prefix: none (no shared hash ids or conversations)"));
            emit prefixShareShown();
        });
}

void AdvisorDock::updateSloRows()
{
    const bool tokens = m_sloKind->currentIndex() == 1;
    for (QWidget *w : m_e2eRows)
        w->setVisible(!tokens);
    for (QWidget *w : m_tokenRows)
        w->setVisible(tokens);
}

void AdvisorDock::updateCalibrationNote()
{
    const ModelInfo &model = m_bridge.engine().model();
    const bool served = std::any_of(m_calibrations.begin(), m_calibrations.end(),
                                    [&](const Calibration &c) { return c.model == model.name; });
    const int index = m_calibration->currentIndex();
    const Calibration *selected = index >= 0 && std::size_t(index) < m_calibrations.size()
                                      ? &m_calibrations[std::size_t(index)]
                                      : nullptr;
    QString note;
    if (m_calibrations.empty())
        note = tr("No calibration yet: calibrate first. The search simulates with a cost model of the model: "
                  "run\n  batchpilot calibrate --model %1 --quick\n(or --session ID to fit a recorded "
                  "session), then press ↻.")
                   .arg(QString::fromStdString(model.name));
    else if (!served)
        note = tr("No calibration of %1, the model this console serves: the search would predict another "
                  "model. Calibrate first: batchpilot calibrate --model %1 --quick")
                   .arg(QString::fromStdString(model.name));
    else if (const auto warning = selected ? interferenceWarning(*selected) : std::nullopt)
        note = QString::fromStdString(*warning);
    m_calibrationNote->setText(note);
    m_calibrationNote->setVisible(!note.isEmpty());
}

void AdvisorDock::refreshCalibrations()
{
    if (!m_store) {
        m_calibrationNote->setText(tr("No trace database: calibrations are stored in it."));
        m_calibrationNote->show();
        return;
    }
    m_calibrationJobs.startJob(
        [store = m_store](const JobTracker::Ticket &) { return listCalibrations(*store); },
        [this](Result<std::vector<Calibration>> list) {
            const QVariant kept = m_calibration->currentData();
            QSignalBlocker block(m_calibration);
            m_calibration->clear();
            if (!list) {
                showProblem(QString::fromStdString(list.status().message()));
                emit calibrationsListed();
                return;
            }
            m_calibrations = std::move(*list);
            const ModelInfo &model = m_bridge.engine().model();
            int match = -1;
            for (const Calibration &c : m_calibrations) { // newest first
                m_calibration->addItem(
                    tr("#%1 %2 — %3, fit error %4%%5")
                        .arg(c.id)
                        .arg(QString::fromStdString(c.describe()), QString::fromStdString(c.source))
                        .arg(100 * c.batchError.medianRel, 0, 'f', 1)
                        .arg(interferenceWarning(c) ? tr(" ⚠ disturbed") : QString()),
                    qlonglong(c.id));
                if (match < 0 && c.model == model.name)
                    match = m_calibration->count() - 1;
            }
            const int kept_ = m_calibration->findData(kept);
            m_calibration->setCurrentIndex(kept_ >= 0 ? kept_ : std::max(0, match));
            updateCalibrationNote();
            updateButtons();
            emit calibrationsListed();
        });
}

Result<AdvisorRequest> AdvisorDock::request() const
{
    const std::optional<ReplaySource> source = m_source->source();
    if (!source)
        return Status(StatusCode::InvalidArgument,
                      "no trace or session to tune for: import a trace or record a session first");
    if (m_calibration->currentIndex() < 0)
        return Status(StatusCode::InvalidArgument,
                      "no calibration: calibrate first (batchpilot calibrate --model " +
                          m_bridge.engine().model().name + " --quick)");
    AdvisorRequest r;
    r.source = *source;
    r.speed = m_speed->value();
    r.lengthScale = m_lengthScale->value();
    r.limit = std::size_t(m_limit->value());
    if (m_sloKind->currentIndex() == 0) {
        r.slo.e2eP99 = std::chrono::microseconds(m_p99->valueUs());
    } else {
        r.slo.ttftP99 = std::chrono::microseconds(m_ttft->valueUs());
        r.slo.tpotP99 = std::chrono::microseconds(m_tpot->valueUs());
    }
    r.objective = TuneObjective(m_objective->currentData().toInt());
    r.calibrationId = m_calibration->currentData().toLongLong();
    r.base = m_bridge.engine().config();
    r.budget = std::size_t(m_budget->value());
    r.maxInstances = m_instances->value();
    // Leave a core to the GUI and the live engine.
    r.threads = std::clamp(QThread::idealThreadCount() - 1, 1, 16);
    auto window = m_verifyPanel->window();
    if (!window)
        return window.status();
    r.verifyWindow = *window;
    return r;
}

} // namespace bp::ui
