// TrafficPanel: the form's state (visibility, saved settings), the live
// counters, the capacity estimate and the load level it warns from. The
// panel itself: traffic_panel.cpp; starting and stopping traffic:
// traffic_panel_run.cpp.
#include "traffic_panel.h"

#include "remote_target_form.h"
#include "trace_list_model.h"

#include "engine/store/trace_store.h"

#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QThreadPool>
#include <QVBoxLayout>

namespace bp::ui {

void TrafficPanel::edited()
{
    updateVisibility();
    if (running())
        m_restart.start();
}

void TrafficPanel::updateVisibility()
{
    const auto arrivals = ArrivalKind(m_arrivals->currentData().toInt());
    const auto lengths = LengthKind(m_lengths->currentData().toInt());
    m_form->setRowVisible(m_burst, arrivals == ArrivalKind::Bursts);
    m_form->setRowVisible(m_fixed, lengths == LengthKind::Fixed);
    m_form->setRowVisible(m_min, lengths == LengthKind::Uniform);
    m_form->setRowVisible(m_max, lengths == LengthKind::Uniform);
    m_form->setRowVisible(m_trace, lengths == LengthKind::Trace);
    m_form->setRowVisible(m_lengthScale, lengths == LengthKind::Trace);
    m_form->setRowVisible(m_remoteForm, remoteTarget());
    m_form->setRowVisible(m_systemShare, m_systemPrompt->value() > 0);
    m_form->setRowVisible(m_turns, m_conversations->value() > 0);
    m_form->setRowVisible(m_think, m_conversations->value() > 0);
    // The target is chosen before starting; a running remote session keeps its server.
    m_targetBox->setEnabled(!running());
    m_remoteForm->setEnabled(!running());
}

void TrafficPanel::saveSettings(QSettings &s) const
{
    s.beginGroup(QStringLiteral("traffic"));
    s.setValue(QStringLiteral("rate"), m_rate->value());
    s.setValue(QStringLiteral("arrivals"), m_arrivals->currentIndex());
    s.setValue(QStringLiteral("burstSize"), m_burst->value());
    s.setValue(QStringLiteral("lengths"), m_lengths->currentIndex());
    s.setValue(QStringLiteral("fixedLength"), m_fixed->value());
    s.setValue(QStringLiteral("minLength"), m_min->value());
    s.setValue(QStringLiteral("maxLength"), m_max->value());
    s.setValue(QStringLiteral("lengthScale"), m_lengthScale->value());
    s.setValue(QStringLiteral("maxNewTokens"), m_maxNew->value());
    s.setValue(QStringLiteral("systemPrompt"), m_systemPrompt->value());
    s.setValue(QStringLiteral("systemShare"), m_systemShare->value());
    s.setValue(QStringLiteral("conversations"), m_conversations->value());
    s.setValue(QStringLiteral("turns"), m_turns->value());
    s.setValue(QStringLiteral("thinkTime"), m_think->value());
    s.setValue(QStringLiteral("remote"), remoteTarget());
    m_remoteForm->save(s);
    s.endGroup();
}

void TrafficPanel::restoreSettings(QSettings &s)
{
    s.beginGroup(QStringLiteral("traffic"));
    auto restore = [&](auto *box, const char *key) {
        const QVariant v = s.value(QLatin1String(key));
        if (v.isValid())
            box->setValue(v.value<std::decay_t<decltype(box->value())>>());
    };
    if (s.value(QStringLiteral("rate")).isValid())
        m_rateChosen = true; // an earlier choice: a measurement does not override it
    restore(m_rate, "rate");
    restore(m_burst, "burstSize");
    restore(m_fixed, "fixedLength");
    restore(m_min, "minLength");
    restore(m_max, "maxLength");
    restore(m_lengthScale, "lengthScale");
    restore(m_maxNew, "maxNewTokens");
    restore(m_systemPrompt, "systemPrompt");
    restore(m_systemShare, "systemShare");
    restore(m_conversations, "conversations");
    restore(m_turns, "turns");
    restore(m_think, "thinkTime");
    for (const auto &[box, key] : {std::pair{m_arrivals, "arrivals"}, std::pair{m_lengths, "lengths"}}) {
        const int i = s.value(QLatin1String(key), -1).toInt();
        if (i >= 0 && i < box->count())
            box->setCurrentIndex(i);
    }
    m_remoteForm->restore(s);
    m_targetBox->setCurrentIndex(s.value(QStringLiteral("remote"), false).toBool() ? 1 : 0);
    s.endGroup();
}

void TrafficPanel::updateCounters()
{
    const LoadGenerator::Counters c = counters();
    m_start->setText(running() ? tr("Stop traffic") : tr("Start traffic"));
    m_counters->setText(tr("sent %L1 · accepted %L2 · rejected %L3\ncompleted %L4 · failed %L5")
                            .arg(c.sent)
                            .arg(c.accepted)
                            .arg(c.rejected)
                            .arg(c.completed)
                            .arg(c.failed) +
                        (c.shed ? tr(" (shed by the client: %L1)").arg(c.shed) : QString()));
}

int TrafficPanel::meanLength() const
{
    switch (LengthKind(m_lengths->currentData().toInt())) {
    case LengthKind::Fixed: return m_fixed->value();
    case LengthKind::Uniform: return (m_min->value() + m_max->value() + 1) / 2;
    default:
        return std::min(128,
                        std::max(1, m_bridge.engine().model().maxSequenceLength)); // a trace: not known yet
    }
}

void TrafficPanel::measureCapacity()
{
    const BatchingConfig config = m_bridge.engine().config();
    const int limit = config.policy == PolicyKind::None     ? 1
                      : config.policy == PolicyKind::Static ? config.staticBatchSize
                                                            : config.maxBatchSize;
    const std::uint64_t generation = ++m_probeGeneration;
    QPointer<TrafficPanel> self(this);
    QThreadPool::globalInstance()->start([self, generation, backend = m_bridge.engine().backend(),
                                          length = meanLength(), newTokens = m_maxNew->value(), limit] {
        auto measured = bp::ui::measureCapacity(*backend, length, newTokens, limit);
        QMetaObject::invokeMethod(
            QCoreApplication::instance(),
            [self, generation, measured = std::move(measured)]() mutable {
                if (!self || generation != self->m_probeGeneration)
                    return;
                if (!measured) {
                    self->m_capacityProblem = QString::fromStdString(measured.status().message());
                    self->updateLoad();
                    emit self->capacityFailed(self->m_capacityProblem);
                    return;
                }
                self->setCapacity(*measured);
            },
            Qt::QueuedConnection);
    });
}

void TrafficPanel::setCapacity(const CapacityEstimate &estimate)
{
    m_capacity = estimate;
    m_capacityProblem.clear();
    if (!m_rateChosen && estimate.requestsPerS > 0) {
        m_settingRate = true;
        m_rate->setValue(defaultRateFor(estimate.requestsPerS));
        m_settingRate = false;
    }
    updateLoad();
    emit capacityMeasured(estimate.requestsPerS);
}

LoadLevel TrafficPanel::loadLevel() const
{
    return bp::ui::loadLevel(m_rate->value(), m_capacity.requestsPerS);
}

void TrafficPanel::observe(const app::SnapshotPtr &snapshot)
{
    if (!snapshot)
        return;
    if (!running() || m_remoteLoad) { // the embedded engine's queue says nothing of a remote server
        m_queue.reset();
    } else {
        m_queue.add(snapshot->queueDepth);
    }
    updateLoad();
}

void TrafficPanel::updateLoad()
{
    const double offered = m_rate->value();
    if (remoteTarget()) {
        // The capacity measured is the embedded model's, not the server's.
        m_load->setText(m_remoteLoad ? tr("offered %L1 req/s to %2 (session %3)")
                                           .arg(offered, 0, 'g', 4)
                                           .arg(m_remoteForm->options().target.toString())
                                           .arg(m_remoteLoad->sessionId())
                                     : tr("offered %L1 req/s to a remote server (its capacity is not "
                                          "measured here)")
                                           .arg(offered, 0, 'g', 4));
        m_load->setToolTip(QString());
        if (!m_load->styleSheet().isEmpty())
            m_load->setStyleSheet(QString());
        if (m_warning) {
            m_warning = false;
            emit warningChanged(false);
        }
        return;
    }
    const double capacity = m_capacity.requestsPerS;
    const int batchLimit = std::max(1, m_bridge.engine().config().maxBatchSize);
    const bool queueGrowing = running() && m_queue.growing(std::size_t(2 * batchLimit));
    QString text;
    if (capacity > 0) {
        text = tr("offered %L1 req/s ≈ %2 of capacity ~%L3 req/s")
                   .arg(offered, 0, 'g', 4)
                   .arg(offered / capacity, 0, 'f', 2)
                   .arg(capacity, 0, 'g', 3);
        m_load->setToolTip(
            tr("Capacity: the best throughput of the model on batches of 1 to %1 requests of %2 tokens"
               "%3, measured when the console started (docs/benchmarks.md: the ceiling). The rate "
               "defaults to 70% of it.")
                .arg(m_capacity.batchLimit)
                .arg(m_capacity.length)
                .arg(m_capacity.newTokens > 0 ? tr(", %1 new tokens each").arg(m_capacity.newTokens)
                                              : QString()));
    } else if (!m_capacityProblem.isEmpty()) {
        text = tr("offered %L1 req/s · capacity unknown: %2").arg(offered, 0, 'g', 4).arg(m_capacityProblem);
    } else {
        text = tr("offered %L1 req/s · measuring the model's capacity…").arg(offered, 0, 'g', 4);
    }
    const LoadLevel level = loadLevel();
    if (queueGrowing)
        text += tr("\nThe queue keeps growing (%L1 waiting): lower the rate or raise the batch size.")
                    .arg(qulonglong(m_queue.depth()));
    else if (level == LoadLevel::Over)
        text += tr("\nAt or above capacity: the queue will grow without bound and latency with it.");
    else if (level == LoadLevel::Near)
        text += tr("\nNear capacity: expect queueing and rising latency.");
    const bool warn = queueGrowing || level == LoadLevel::Over;
    m_load->setText(text);
    const QString style = warn                       ? QStringLiteral("color: #b00020; font-weight: bold;")
                          : level == LoadLevel::Near ? QStringLiteral("color: #a15c00;")
                                                     : QString();
    if (m_load->styleSheet() != style)
        m_load->setStyleSheet(style);
    if (warn != m_warning) {
        m_warning = warn;
        emit warningChanged(warn);
    }
}

} // namespace bp::ui
