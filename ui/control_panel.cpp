#include "control_panel.h"

#include "adaptive_options.h"
#include "bucket_edges_editor.h"
#include "bucket_edges_model.h"
#include "config_change_command.h"
#include "duration_spin_box.h"
#include "knob_form.h"

#include "app/engine_host.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSpinBox>
#include <QUndoStack>
#include <QVBoxLayout>

namespace bp::ui {

namespace {
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
    case PolicyKind::Continuous:
        return ControlPanel::tr("Generation step by step: sequences join and leave between steps under a "
                                "token budget per step.");
    }
    return {};
}
} // namespace

ControlPanel::ControlPanel(app::EngineBridge &bridge, QUndoStack *undoStack, QWidget *parent)
    : QWidget(parent), m_bridge(bridge), m_undo(undoStack)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    m_form = new KnobForm(this);
    // The sections top to bottom (creation order is the tab order).
    layout->addLayout(buildPolicyRows());
    layout->addWidget(buildDynamicGroup());
    layout->addWidget(buildBucketGroup());
    layout->addWidget(buildStaticGroup());
    layout->addWidget(buildContinuousGroup());
    layout->addWidget(buildGoodputGroup());
    layout->addWidget(buildEngineGroup());
    layout->addWidget(buildAdaptiveGroup());
    addUnplacedKnobs(layout);
    addFooter(layout);

    connectEditsAndEngine();
    showConfig(m_bridge.engine().config());
}

QFormLayout *ControlPanel::buildPolicyRows()
{
    auto *policyForm = new QFormLayout;
    m_policy = m_form->add<QComboBox>("policy", this);
    policyForm->addRow(tr("&Policy"), m_policy);
    m_policyHint = new QLabel(this);
    m_policyHint->setWordWrap(true);
    m_policyHint->setStyleSheet(QStringLiteral("color: palette(mid);"));
    policyForm->addRow(m_policyHint);
    // Which default the model opened with: continuous for a
    // generative model, dynamic for an encoder; --config overrides it.
    m_defaultNote = new QLabel(app::defaultPolicyNote(m_bridge.engine().model()), this);
    m_defaultNote->setObjectName(QStringLiteral("defaultPolicyNote"));
    m_defaultNote->setWordWrap(true);
    m_defaultNote->setStyleSheet(QStringLiteral("color: palette(mid);"));
    policyForm->addRow(m_defaultNote);
    // Picking a policy brings its group into view (the panel scrolls in its dock).
    connect(m_policy, &QComboBox::currentIndexChanged, this, [this] {
        if (!m_showing)
            revealPolicyGroup();
    });
    return policyForm;
}

void ControlPanel::addKnobRows(QFormLayout *form, std::span<const std::pair<const char *, QString>> rows)
{
    for (const auto &[key, label] : rows) {
        form->addRow(label, m_form->add(key, this));
        form->addRow(addErrorLabel(QString::fromStdString(findKnob(key)->label()))); // "goodput.ttft"
    }
}

QGroupBox *ControlPanel::buildDynamicGroup()
{
    m_dynamicGroup = new QGroupBox(tr("Dynamic and bucketed"), this);
    auto *dyn = new QFormLayout(m_dynamicGroup);
    m_maxBatch = m_form->add<QSpinBox>("max_batch_size", this);
    dyn->addRow(tr("Max &batch size"), m_maxBatch);
    dyn->addRow(addErrorLabel(QStringLiteral("max_batch_size")));
    m_delay = m_form->add<DurationSpinBox>("max_queue_delay_us", this);
    dyn->addRow(tr("Max queue &delay"), m_delay);
    dyn->addRow(addErrorLabel(QStringLiteral("max_queue_delay")));
    return m_dynamicGroup;
}

QGroupBox *ControlPanel::buildBucketGroup()
{
    m_bucketGroup = new QGroupBox(tr("Length buckets (bucketed)"), this);
    auto *buckets = new QVBoxLayout(m_bucketGroup);
    m_edges = new BucketEdgesEditor(this);
    m_form->attach("bucket_edges", m_edges); // its own model reads and writes the edges
    buckets->addWidget(m_edges);
    buckets->addWidget(addErrorLabel(QStringLiteral("bucket_edges")));
    return m_bucketGroup;
}

QGroupBox *ControlPanel::buildStaticGroup()
{
    m_staticGroup = new QGroupBox(tr("Static"), this);
    auto *stat = new QFormLayout(m_staticGroup);
    m_staticBatch = m_form->add<QSpinBox>("static_batch_size", this);
    stat->addRow(tr("Batch si&ze"), m_staticBatch);
    stat->addRow(addErrorLabel(QStringLiteral("static_batch_size")));
    m_paddedLength = m_form->add<QSpinBox>("static_padded_length", this);
    stat->addRow(tr("Padded &length"), m_paddedLength);
    stat->addRow(addErrorLabel(QStringLiteral("static_padded_length")));
    m_flush = m_form->add<QCheckBox>("static_flush_on_drain", this);
    m_flush->setText(tr("Run a partial batch on shutdown"));
    stat->addRow(m_flush);
    return m_staticGroup;
}

QGroupBox *ControlPanel::buildContinuousGroup()
{
    m_continuousGroup = new QGroupBox(tr("Continuous (generation)"), this);
    auto *cont = new QFormLayout(m_continuousGroup);
    const std::pair<const char *, QString> rows[] = {
        {"continuous.max_num_seqs", tr("Running sequences")},
        {"continuous.max_num_batched_tokens", tr("Tokens per step")},
        {"continuous.prefill_chunk", tr("Prefill chunk")},
        {"continuous.kv_cache_tokens", tr("KV budget (tokens)")},
    };
    addKnobRows(cont, rows);
    const std::pair<const char *, QString> checks[] = {
        {"continuous.chunked_prefill", tr("Chunked prefill")},
        {"continuous.decode_first", tr("Decodes first (else prefills first)")},
        {"continuous.priority_order", tr("By priority (else first come, first served)")},
    };
    for (const auto &[key, label] : checks) {
        auto *box = m_form->add<QCheckBox>(key, this);
        box->setText(label);
        cont->addRow(box);
    }
    return m_continuousGroup;
}

QGroupBox *ControlPanel::buildGoodputGroup()
{
    // The yardstick, not a batching knob: goodput counts the requests that
    // meet every SLO set here (0 = not set), under any policy.
    auto *sloGroup = new QGroupBox(tr("Goodput SLOs"), this);
    const std::pair<const char *, QString> rows[] = {
        {"goodput.ttft_us", tr("Time to first token ≤")},
        {"goodput.tpot_us", tr("Time per output token ≤")},
        {"goodput.e2e_us", tr("End-to-end ≤")},
    };
    addKnobRows(new QFormLayout(sloGroup), rows);
    return sloGroup;
}

QGroupBox *ControlPanel::buildEngineGroup()
{
    auto *engineGroup = new QGroupBox(tr("Engine"), this);
    auto *eng = new QFormLayout(engineGroup);
    m_instances = m_form->add<QSpinBox>("instances", this);
    eng->addRow(tr("&Instances"), m_instances);
    eng->addRow(addErrorLabel(QStringLiteral("instances")));
    m_queueCapacity = m_form->add<QSpinBox>("queue_capacity", this);
    eng->addRow(tr("&Queue capacity"), m_queueCapacity);
    eng->addRow(addErrorLabel(QStringLiteral("queue_capacity")));
    return engineGroup;
}

QGroupBox *ControlPanel::buildAdaptiveGroup()
{
    auto *adaptiveGroup = new QGroupBox(tr("Adaptive and limits"), this);
    auto *adaptiveLayout = new QVBoxLayout(adaptiveGroup);
    adaptiveLayout->setContentsMargins(4, 4, 4, 4);
    m_adaptive = new AdaptiveOptions(
        *m_form, [this](const QString &field) { return addErrorLabel(field); }, this);
    adaptiveLayout->addWidget(m_adaptive);
    return adaptiveGroup;
}

void ControlPanel::addUnplacedKnobs(QVBoxLayout *layout)
{
    // A knob of the table that no section above places (a newly declared
    // one) still gets its editor, named by its key.
    QFormLayout *more = nullptr;
    for (const Knob &k : knobs()) {
        if (m_form->editor(k.key))
            continue;
        if (!more) {
            auto *group = new QGroupBox(tr("More knobs"), this);
            more = new QFormLayout(group);
            layout->addWidget(group);
        }
        const QString key = QString::fromUtf8(k.key.data(), qsizetype(k.key.size()));
        more->addRow(key, m_form->add(k.key, this));
        more->addRow(addErrorLabel(QString::fromStdString(k.label())));
    }
}

void ControlPanel::addFooter(QVBoxLayout *layout)
{
    layout->addWidget(addErrorLabel(QString()));
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    layout->addWidget(m_status);
    m_revert = new QPushButton(tr("Revert to the engine's config"), this);
    m_revert->setToolTip(tr("Drop edits that are pending or were refused (Esc)"));
    m_revert->setShortcut(QKeySequence(Qt::Key_Escape));
    layout->addWidget(m_revert);
    layout->addStretch(1);
}

void ControlPanel::connectEditsAndEngine()
{
    m_debounce.setSingleShot(true);
    m_debounce.setInterval(kDebounceMs);
    connect(&m_debounce, &QTimer::timeout, this, &ControlPanel::applyNow);
    connect(m_revert, &QPushButton::clicked, this, &ControlPanel::revertToEngine);

    connect(m_form, &KnobForm::edited, this, &ControlPanel::edited);
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
    m_form->fill(c);
    c.bucketEdges = m_edges->model()->edges();
    return c;
}

void ControlPanel::showConfig(const BatchingConfig &c)
{
    if (c.policy != m_shown.policy) // e.g. the engine started on --config: show its group
        QTimer::singleShot(0, this, &ControlPanel::revealPolicyGroup);
    m_showing = true;
    m_shown = c;
    m_form->setConfig(c);
    m_edges->model()->setEdges(c.bucketEdges);
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
    mark(m_continuousGroup, tr("Continuous (generation)"), policy == PolicyKind::Continuous);
}

void ControlPanel::revealPolicyGroup()
{
    const auto policy = PolicyKind(m_policy->currentData().toInt());
    QGroupBox *group = policy == PolicyKind::Continuous ? m_continuousGroup
                       : policy == PolicyKind::Static   ? m_staticGroup
                       : policy == PolicyKind::Bucketed ? m_bucketGroup
                                                        : m_dynamicGroup;
    for (QWidget *w = parentWidget(); w; w = w->parentWidget()) {
        if (auto *scroll = qobject_cast<QScrollArea *>(w)) {
            scroll->ensureWidgetVisible(group, 0, 0);
            return;
        }
    }
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
