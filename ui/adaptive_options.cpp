#include "adaptive_options.h"

#include "duration_spin_box.h"
#include "knob_form.h"

#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QVBoxLayout>

namespace bp::ui {

AdaptiveOptions::AdaptiveOptions(KnobForm &form, const std::function<QLabel *(const QString &)> &errorLabel,
                                 QWidget *parent)
    : QWidget(parent), m_form(form)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto row = [this](QFormLayout *rows, const QString &label, std::string_view key) {
        rows->addRow(label, m_form.add(key, this));
    };

    m_adaptive = form.addGroup("adaptive_delay.enabled", tr("Adaptive delay"), this);
    auto *a = new QFormLayout(m_adaptive);
    row(a, tr("Min delay"), "adaptive_delay.min_delay_us");
    row(a, tr("Max delay"), "adaptive_delay.max_delay_us");
    row(a, tr("Fill"), "adaptive_delay.fill");
    row(a, tr("Period"), "adaptive_delay.period_us");
    a->addRow(errorLabel(QStringLiteral("adaptive_delay")));
    layout->addWidget(m_adaptive);

    m_slo = form.addGroup("slo.enabled", tr("SLO controller (p99)"), this);
    auto *s = new QFormLayout(m_slo);
    row(s, tr("p99 target"), "slo.p99_target_us");
    row(s, tr("Batch from"), "slo.min_batch");
    row(s, tr("Batch to"), "slo.max_batch");
    row(s, tr("Batch step"), "slo.batch_step");
    row(s, tr("Min delay"), "slo.min_delay_us");
    row(s, tr("Max delay"), "slo.max_delay_us");
    row(s, tr("Delay step"), "slo.delay_step_us");
    row(s, tr("Decrease"), "slo.decrease");
    row(s, tr("Period"), "slo.period_us");
    s->addRow(errorLabel(QStringLiteral("slo")));
    layout->addWidget(m_slo);

    auto *h = new QGroupBox(tr("Hybrid static layer"), this);
    h->setToolTip(tr("Policy hybrid: short requests under load go to static batches of these sizes"));
    auto *hf = new QFormLayout(h);
    row(hf, tr("Sizes"), "hybrid.static_sizes");
    row(hf, tr("Max length"), "hybrid.max_static_length");
    row(hf, tr("Min rate"), "hybrid.min_static_rate");
    row(hf, tr("Max wait"), "hybrid.static_max_wait_us");
    hf->addRow(errorLabel(QStringLiteral("hybrid")));
    layout->addWidget(h);

    m_cache = form.addGroup("cache.enabled", tr("Response cache"), this);
    auto *c = new QFormLayout(m_cache);
    row(c, tr("Entries"), "cache.max_entries");
    c->addRow(tr("Size"), form.add("cache.max_bytes", this, double(1 << 20), tr("MiB")));
    c->addRow(errorLabel(QStringLiteral("cache")));
    layout->addWidget(m_cache);

    auto *limits = new QGroupBox(tr("Limits"), this);
    auto *l = new QFormLayout(limits);
    row(l, tr("Memory batch limit"), "memory_batch_limit");
    form.editor<QAbstractSpinBox>("memory_batch_limit")->setSpecialValueText(tr("none"));
    l->addRow(errorLabel(QStringLiteral("memory_batch_limit")));
    row(l, tr("Priority aging"), "priority_aging_us");
    l->addRow(errorLabel(QStringLiteral("priority_aging")));
    layout->addWidget(limits);
}

DurationSpinBox *AdaptiveOptions::sloTargetBox() const
{
    return m_form.editor<DurationSpinBox>("slo.p99_target_us");
}

QLineEdit *AdaptiveOptions::hybridSizesEdit() const
{
    return m_form.editor<QLineEdit>("hybrid.static_sizes");
}

} // namespace bp::ui
