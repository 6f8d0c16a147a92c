#include "control_panel.h"

#include "adaptive_options.h"
#include "bucket_edges_editor.h"
#include "bucket_edges_model.h"
#include "config_change_command.h"
#include "duration_spin_box.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QUndoStack>
#include <QVBoxLayout>

namespace bp::ui {

namespace {
// The spin boxes accept more than the engine does: its validate() is the
// one authority on ranges (shared with REST and --config), and its reason
// is what the operator sees.
QSpinBox *spinBox(int max, const QString &tooltip, QWidget *parent)
{
    auto *box = new QSpinBox(parent);
    box->setRange(0, max);
    box->setToolTip(tooltip);
    box->setKeyboardTracking(true);
    return box;
}

QString hintFor(PolicyKind policy)
{
    switch (policy) {
    case PolicyKind::None:
        return ControlPanel::tr("Batches of one: the baseline every gain is measured against.");
    case PolicyKind::Static:
        return ControlPanel::tr("Waits for exactly N requests; pads every batch to a fixed length.");
    case PolicyKind::Dynamic:
        return ControlPanel::tr(
            "Dispatches at the max batch size or when the oldest request has waited the queue delay.");
    case PolicyKind::Bucketed:
        return ControlPanel::tr(
            "Dynamic batching per length bucket (less padding); the most overdue bucket goes first.");
    case PolicyKind::Hybrid:
        return ControlPanel::tr(
            "Short requests under load go to static batches of a few sizes; the rest to a dynamic layer.");
    }
    return {};
}
} // namespace

ControlPanel::ControlPanel(app::EngineBridge &bridge, QUndoStack *undoStack, QWidget *parent)
    : QWidget(parent), m_bridge(bridge), m_undo(undoStack)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    auto *policyForm = new QFormLayout;
    m_policy = new QComboBox(this);
    for (PolicyKind k : {PolicyKind::None, PolicyKind::Static, PolicyKind::Dynamic, PolicyKind::Bucketed,
                         PolicyKind::Hybrid})
        m_policy->addItem(QString::fromUtf8(policyName(k).data()), int(k));
    policyForm->addRow(tr("&Policy"), m_policy);
    m_policyHint = new QLabel(this);
    m_policyHint->setWordWrap(true);
    m_policyHint->setStyleSheet(QStringLiteral("color: palette(mid);"));
    policyForm->addRow(m_policyHint);
    layout->addLayout(policyForm);

    m_dynamicGroup = new QGroupBox(tr("Dynamic and bucketed"), this);
    auto *dyn = new QFormLayout(m_dynamicGroup);
    m_maxBatch = spinBox(1'000'000, tr("Largest batch, in requests (1–1024)"), this);
    dyn->addRow(tr("Max &batch size"), m_maxBatch);
    dyn->addRow(addErrorLabel(QStringLiteral("max_batch_size")));
    m_delay = new DurationSpinBox(this);
    m_delay->setToolTip(tr("How long the oldest request may wait for company (0–10 s). "
                           "Type e.g. 250 µs, 5 ms or 1.5 s; the arrows step 1-2-5."));
    dyn->addRow(tr("Max queue &delay"), m_delay);
    dyn->addRow(addErrorLabel(QStringLiteral("max_queue_delay")));
    layout->addWidget(m_dynamicGroup);

    m_bucketGroup = new QGroupBox(tr("Length buckets (bucketed)"), this);
    auto *buckets = new QVBoxLayout(m_bucketGroup);
    m_edges = new BucketEdgesEditor(this);
    buckets->addWidget(m_edges);
    buckets->addWidget(addErrorLabel(QStringLiteral("bucket_edges")));
    layout->addWidget(m_bucketGroup);

    m_staticGroup = new QGroupBox(tr("Static"), this);
    auto *stat = new QFormLayout(m_staticGroup);
    m_staticBatch = spinBox(1'000'000, tr("The batch size N the static policy waits for (1–1024)"), this);
    stat->addRow(tr("Batch si&ze"), m_staticBatch);
    stat->addRow(addErrorLabel(QStringLiteral("static_batch_size")));
    m_paddedLength = spinBox(10'000'000,
                             tr("Every batch is padded to this length; longer requests are rejected "
                                "(1–65536)"),
                             this);
    stat->addRow(tr("Padded &length"), m_paddedLength);
    stat->addRow(addErrorLabel(QStringLiteral("static_padded_length")));
    m_flush = new QCheckBox(tr("Run a partial batch on shutdown"), this);
    m_flush->setToolTip(tr("static_flush_on_drain: on shutdown, run a partial batch (on) or fail it (off)"));
    stat->addRow(m_flush);
    layout->addWidget(m_staticGroup);

    auto *engineGroup = new QGroupBox(tr("Engine"), this);
    auto *eng = new QFormLayout(engineGroup);
    m_instances =
        spinBox(1000, tr("Executor threads = model instances running batches concurrently (1–16)"), this);
    eng->addRow(tr("&Instances"), m_instances);
    eng->addRow(addErrorLabel(QStringLiteral("instances")));
    m_queueCapacity =
        spinBox(100'000'000, tr("Admission queue depth; beyond it requests are refused (1–1000000)"), this);
    m_queueCapacity->setSingleStep(256);
    eng->addRow(tr("&Queue capacity"), m_queueCapacity);
    eng->addRow(addErrorLabel(QStringLiteral("queue_capacity")));
    layout->addWidget(engineGroup);

    auto *adaptiveGroup = new QGroupBox(tr("Adaptive and limits"), this);
    auto *adaptiveLayout = new QVBoxLayout(adaptiveGroup);
    adaptiveLayout->setContentsMargins(4, 4, 4, 4);
    m_adaptive = new AdaptiveOptions([this](const QString &field) { return addErrorLabel(field); }, this);
    adaptiveLayout->addWidget(m_adaptive);
    layout->addWidget(adaptiveGroup);

    layout->addWidget(addErrorLabel(QString()));
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    m_revert = new QPushButton(tr("Revert to the engine's config"), this);
    m_revert->setToolTip(tr("Drop edits that are pending or were refused (Esc)"));
    m_revert->setShortcut(QKeySequence(Qt::Key_Escape));
    layout->addWidget(m_revert);
    layout->addStretch(1);

    m_debounce.setSingleShot(true);
    m_debounce.setInterval(kDebounceMs);
    connect(&m_debounce, &QTimer::timeout, this, &ControlPanel::applyNow);
    connect(m_revert, &QPushButton::clicked, this, &ControlPanel::revertToEngine);

    connect(m_policy, &QComboBox::currentIndexChanged, this, &ControlPanel::edited);
    for (QSpinBox *box : {m_maxBatch, m_staticBatch, m_paddedLength, m_instances, m_queueCapacity})
        connect(box, &QSpinBox::valueChanged, this, &ControlPanel::edited);
    connect(m_delay, &DurationSpinBox::valueChanged, this, &ControlPanel::edited);
    connect(m_flush, &QCheckBox::toggled, this, &ControlPanel::edited);
    connect(m_adaptive, &AdaptiveOptions::edited, this, &ControlPanel::edited);
    connect(m_edges->model(), &BucketEdgesModel::edgesEdited, this, &ControlPanel::edited);
    connect(m_edges->model(), &BucketEdgesModel::editRejected, this, [this](const QString &why) {
        m_errors[QStringLiteral("bucket_edges")]->setText(why);
        m_errors[QStringLiteral("bucket_edges")]->show();
    });

    connect(&m_bridge, &app::EngineBridge::snapshotReady, this, &ControlPanel::showSnapshot);
    connect(&m_bridge, &app::EngineBridge::configRejected, this, &ControlPanel::showError);
    connect(&m_bridge, &app::EngineBridge::configApplied, this, [this](const BatchingConfig &c) {
        if (!m_dirty)
            showConfig(c);
    });
    // Undo and redo replace whatever the form held.
    connect(m_undo, &QUndoStack::indexChanged, this, [this] {
        if (!m_showing)
            revertToEngine();
    });

    showConfig(m_bridge.engine().config());
}

QLabel *ControlPanel::addErrorLabel(const QString &field)
{
    auto *label = new QLabel(this);
    label->setWordWrap(true);
    label->setStyleSheet(QStringLiteral("color: #b00020;"));
    label->hide();
    m_errors[field] = label;
    return label;
}

QString ControlPanel::errorFor(const QString &field) const
{
    auto it = m_errors.find(field);
    return it == m_errors.end() || it->second->isHidden() ? QString() : it->second->text();
}

BatchingConfig ControlPanel::formConfig() const
{
    BatchingConfig c = m_shown;
    c.policy = PolicyKind(m_policy->currentData().toInt());
    c.maxBatchSize = m_maxBatch->value();
    if (std::chrono::duration_cast<std::chrono::microseconds>(c.maxQueueDelay).count() != m_delay->valueUs())
        c.maxQueueDelay = std::chrono::microseconds(m_delay->valueUs()); // the box shows whole µs
    c.bucketEdges = m_edges->model()->edges();
    c.staticBatchSize = m_staticBatch->value();
    c.staticPaddedLength = m_paddedLength->value();
    c.staticFlushOnDrain = m_flush->isChecked();
    c.instances = m_instances->value();
    c.queueCapacity = m_queueCapacity->value();
    m_adaptive->fill(c);
    return c;
}

void ControlPanel::showConfig(const BatchingConfig &c)
{
    m_showing = true;
    m_shown = c;
    m_adaptive->setConfig(c);
    m_policy->setCurrentIndex(m_policy->findData(int(c.policy)));
    m_maxBatch->setValue(c.maxBatchSize);
    m_delay->setValueUs(std::chrono::duration_cast<std::chrono::microseconds>(c.maxQueueDelay).count());
    m_edges->model()->setEdges(c.bucketEdges);
    m_staticBatch->setValue(c.staticBatchSize);
    m_paddedLength->setValue(c.staticPaddedLength);
    m_flush->setChecked(c.staticFlushOnDrain);
    m_instances->setValue(c.instances);
    m_queueCapacity->setValue(c.queueCapacity);
    m_showing = false;
    updatePolicyHints();
    updateStatus();
}

void ControlPanel::edited()
{
    if (m_showing)
        return;
    updatePolicyHints();
    m_dirty = true;
    m_debounce.start();
    updateStatus();
}

void ControlPanel::applyNow()
{
    m_debounce.stop();
    // Only what the operator edited: the form against what it last showed.
    // Fields changed meanwhile by someone else (REST, the controllers) stay.
    const ConfigPatch patch = ConfigPatch::diff(m_shown, formConfig());
    if (patch.empty()) {
        m_dirty = false;
        clearErrors();
        updateStatus();
        return;
    }
    const std::optional<ConfigUpdate> update = m_bridge.applyPatch(patch, QStringLiteral("gui"));
    if (!update)
        return; // configRejected showed why
    m_dirty = false;
    clearErrors();
    showConfig(update->after);
    if (update->version == 0) { // the engine already had these values
        updateStatus();
        return;
    }
    m_lastApplied = QString::fromStdString(describeChange(update->before, update->after));
    m_showing = true; // pushing emits indexChanged: this change is already in the form
    m_undo->push(new ConfigChangeCommand(m_bridge, update->before, update->after));
    m_showing = false;
    updateStatus();
    emit configApplied(m_lastApplied);
}

void ControlPanel::revertToEngine()
{
    m_debounce.stop();
    m_dirty = false;
    clearErrors();
    showConfig(m_bridge.engine().config());
}

void ControlPanel::showSnapshot(const app::SnapshotPtr &s)
{
    if (s->configVersion == m_version)
        return;
    m_version = s->configVersion;
    if (!m_dirty && !(formConfig() == s->config))
        showConfig(s->config);
    updateStatus();
}

void ControlPanel::showError(const QString &message)
{
    clearErrors();
    // validate() names the field first: "max_batch_size = 0 is outside [1, 1024]"
    const QString field = message.section(QRegularExpression(QStringLiteral("[ =\\[]")), 0, 0);
    // Nested fields ("slo.p99_target") have one label per group ("slo").
    const QString group = field.section(QLatin1Char('.'), 0, 0);
    QLabel *label = m_errors.count(field)   ? m_errors[field]
                    : m_errors.count(group) ? m_errors[group]
                                            : m_errors[QString()];
    label->setText(tr("Not applied: %1").arg(message));
    label->show();
    updateStatus();
}

void ControlPanel::clearErrors()
{
    for (auto &[field, label] : m_errors) {
        label->clear();
        label->hide();
    }
}

void ControlPanel::updatePolicyHints()
{
    const auto policy = PolicyKind(m_policy->currentData().toInt());
    m_policyHint->setText(hintFor(policy));
    auto mark = [](QGroupBox *group, const QString &title, bool active) {
        group->setTitle(active ? tr("%1 — in use").arg(title) : title);
    };
    mark(m_dynamicGroup, tr("Dynamic and bucketed"),
         policy == PolicyKind::Dynamic || policy == PolicyKind::Bucketed);
    mark(m_bucketGroup, tr("Length buckets (bucketed)"), policy == PolicyKind::Bucketed);
    mark(m_staticGroup, tr("Static"), policy == PolicyKind::Static);
}

void ControlPanel::updateStatus()
{
    QString text;
    if (m_debounce.isActive())
        text = tr("Applying…");
    else if (m_dirty)
        text = tr("Not applied: fix the value marked in red, or revert (Esc).");
    else if (m_version > 0)
        text = tr("Engine config v%1%2")
                   .arg(m_version)
                   .arg(m_lastApplied.isEmpty() ? QString() : tr(" · last change: %1").arg(m_lastApplied));
    m_status->setText(text);
    m_revert->setEnabled(m_dirty);
}

} // namespace bp::ui
