#include "adaptive_options.h"

#include "duration_spin_box.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QVBoxLayout>

namespace bp::ui {

namespace {
qint64 us(Duration d)
{
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}

// The boxes show whole microseconds (and MiB): a field is only rewritten
// when the box shows something else, so sub-unit values set through REST
// or a config file survive an apply from the console.
void take(Duration &field, const DurationSpinBox *box)
{
    if (us(field) != box->valueUs())
        field = std::chrono::microseconds(box->valueUs());
}

QGroupBox *group(const QString &title, const QString &tip, bool checkable, QWidget *parent)
{
    auto *g = new QGroupBox(title, parent);
    g->setToolTip(tip);
    g->setCheckable(checkable);
    return g;
}
} // namespace

AdaptiveOptions::AdaptiveOptions(const std::function<QLabel *(const QString &)> &errorLabel, QWidget *parent)
    : QWidget(parent)
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto duration = [this](const QString &tip) {
        auto *box = new DurationSpinBox(this);
        box->setToolTip(tip);
        connect(box, &DurationSpinBox::valueChanged, this, &AdaptiveOptions::edited);
        return box;
    };
    auto spin = [this](int lo, int hi, const QString &tip) {
        auto *box = new QSpinBox(this);
        box->setRange(lo, hi);
        box->setToolTip(tip);
        connect(box, &QSpinBox::valueChanged, this, &AdaptiveOptions::edited);
        return box;
    };

    m_adaptive = group(tr("Adaptive delay"),
                       tr("Queue delay from the observed arrival rate: the time the rate needs "
                          "to fill fill × max batch size, within [min, max]"),
                       true, this);
    auto *a = new QFormLayout(m_adaptive);
    m_adaptiveMin = duration(tr("Shortest delay the rate may choose"));
    m_adaptiveMax = duration(tr("Longest delay the rate may choose"));
    m_adaptivePeriod = duration(tr("How often the delay is re-evaluated"));
    m_adaptiveFill = new QDoubleSpinBox(this);
    m_adaptiveFill->setRange(0, 100);
    m_adaptiveFill->setDecimals(2);
    m_adaptiveFill->setToolTip(tr("Fraction of max batch size to wait for (0–4]"));
    connect(m_adaptiveFill, &QDoubleSpinBox::valueChanged, this, &AdaptiveOptions::edited);
    a->addRow(tr("Min delay"), m_adaptiveMin);
    a->addRow(tr("Max delay"), m_adaptiveMax);
    a->addRow(tr("Fill"), m_adaptiveFill);
    a->addRow(tr("Period"), m_adaptivePeriod);
    a->addRow(errorLabel(QStringLiteral("adaptive_delay")));
    layout->addWidget(m_adaptive);

    m_slo = group(tr("SLO controller (p99)"),
                  tr("AIMD: when the p99 over a period exceeds the target, batch size and "
                     "delay are cut; otherwise they grow step by step"),
                  true, this);
    auto *s = new QFormLayout(m_slo);
    m_sloTarget = duration(tr("p99 of total latency to stay under"));
    m_sloMinBatch = spin(0, 1'000'000, tr("Smallest max batch size the controller may set"));
    m_sloMaxBatch = spin(0, 1'000'000, tr("Largest max batch size the controller may set"));
    m_sloMaxDelay = duration(tr("Longest queue delay the controller may set"));
    m_sloPeriod = duration(tr("How often the controller decides"));
    s->addRow(tr("p99 target"), m_sloTarget);
    s->addRow(tr("Batch from"), m_sloMinBatch);
    s->addRow(tr("Batch to"), m_sloMaxBatch);
    s->addRow(tr("Max delay"), m_sloMaxDelay);
    s->addRow(tr("Period"), m_sloPeriod);
    s->addRow(errorLabel(QStringLiteral("slo")));
    layout->addWidget(m_slo);

    auto *h = group(tr("Hybrid static layer"),
                    tr("Policy hybrid: short requests under load go to static batches of "
                       "these sizes"),
                    false, this);
    auto *hf = new QFormLayout(h);
    m_hybridSizes = new QLineEdit(this);
    m_hybridSizes->setToolTip(tr("Static batch sizes, increasing, comma-separated (e.g. 8,16,32)"));
    connect(m_hybridSizes, &QLineEdit::textEdited, this, &AdaptiveOptions::edited);
    m_hybridLength = spin(0, 10'000'000, tr("Longest request the static layer takes"));
    m_hybridRate = new QDoubleSpinBox(this);
    m_hybridRate->setRange(0, 1e9);
    m_hybridRate->setSuffix(tr(" req/s"));
    m_hybridRate->setToolTip(tr("Below this arrival rate everything goes to the dynamic layer"));
    connect(m_hybridRate, &QDoubleSpinBox::valueChanged, this, &AdaptiveOptions::edited);
    m_hybridWait = duration(tr("A static batch leaves after this even when not full"));
    hf->addRow(tr("Sizes"), m_hybridSizes);
    hf->addRow(tr("Max length"), m_hybridLength);
    hf->addRow(tr("Min rate"), m_hybridRate);
    hf->addRow(tr("Max wait"), m_hybridWait);
    hf->addRow(errorLabel(QStringLiteral("hybrid")));
    layout->addWidget(h);

    m_cache =
        group(tr("Response cache"), tr("LRU cache keyed by the exact input and max_new_tokens"), true, this);
    auto *c = new QFormLayout(m_cache);
    m_cacheEntries = spin(0, 100'000'000, tr("Entries kept"));
    m_cacheMiB = spin(0, 1'000'000, tr("Memory for cached responses"));
    m_cacheMiB->setSuffix(tr(" MiB"));
    c->addRow(tr("Entries"), m_cacheEntries);
    c->addRow(tr("Size"), m_cacheMiB);
    c->addRow(errorLabel(QStringLiteral("cache")));
    layout->addWidget(m_cache);

    auto *limits = group(tr("Limits"), QString(), false, this);
    auto *l = new QFormLayout(limits);
    m_memoryLimit = spin(0, 1'000'000,
                         tr("Cap on any batch (0 = none); the memory guard sets it after an "
                            "out-of-memory error"));
    m_memoryLimit->setSpecialValueText(tr("none"));
    m_aging = duration(tr("A waiting request's priority grows by one per this much waiting"));
    l->addRow(tr("Memory batch limit"), m_memoryLimit);
    l->addRow(errorLabel(QStringLiteral("memory_batch_limit")));
    l->addRow(tr("Priority aging"), m_aging);
    l->addRow(errorLabel(QStringLiteral("priority_aging")));
    layout->addWidget(limits);

    for (QGroupBox *g : {m_adaptive, m_slo, m_cache})
        connect(g, &QGroupBox::toggled, this, &AdaptiveOptions::edited);
}

void AdaptiveOptions::setConfig(const BatchingConfig &c)
{
    const QSignalBlocker block(this); // filling the form is not an edit
    m_adaptive->setChecked(c.adaptiveDelay.enabled);
    m_adaptiveMin->setValueUs(us(c.adaptiveDelay.minDelay));
    m_adaptiveMax->setValueUs(us(c.adaptiveDelay.maxDelay));
    m_adaptivePeriod->setValueUs(us(c.adaptiveDelay.period));
    m_adaptiveFill->setValue(c.adaptiveDelay.fill);
    m_slo->setChecked(c.slo.enabled);
    m_sloTarget->setValueUs(us(c.slo.p99Target));
    m_sloMinBatch->setValue(c.slo.minBatch);
    m_sloMaxBatch->setValue(c.slo.maxBatch);
    m_sloMaxDelay->setValueUs(us(c.slo.maxDelay));
    m_sloPeriod->setValueUs(us(c.slo.period));
    QStringList sizes;
    for (int size : c.hybrid.staticSizes)
        sizes << QString::number(size);
    m_hybridSizes->setText(sizes.join(QLatin1Char(',')));
    m_hybridLength->setValue(c.hybrid.maxStaticLength);
    m_hybridRate->setValue(c.hybrid.minStaticRate);
    m_hybridWait->setValueUs(us(c.hybrid.staticMaxWait));
    m_cache->setChecked(c.cache.enabled);
    m_cacheEntries->setValue(c.cache.maxEntries);
    m_cacheMiB->setValue(int(c.cache.maxBytes >> 20));
    m_memoryLimit->setValue(c.memoryBatchLimit);
    m_aging->setValueUs(us(c.priorityAging));
}

void AdaptiveOptions::fill(BatchingConfig &c) const
{
    c.adaptiveDelay.enabled = m_adaptive->isChecked();
    take(c.adaptiveDelay.minDelay, m_adaptiveMin);
    take(c.adaptiveDelay.maxDelay, m_adaptiveMax);
    take(c.adaptiveDelay.period, m_adaptivePeriod);
    c.adaptiveDelay.fill = m_adaptiveFill->value();
    c.slo.enabled = m_slo->isChecked();
    take(c.slo.p99Target, m_sloTarget);
    c.slo.minBatch = m_sloMinBatch->value();
    c.slo.maxBatch = m_sloMaxBatch->value();
    take(c.slo.maxDelay, m_sloMaxDelay);
    take(c.slo.period, m_sloPeriod);
    // Unparsable entries become 0, which validate() refuses with its reason.
    c.hybrid.staticSizes.clear();
    for (const QString &part : m_hybridSizes->text().split(QLatin1Char(','), Qt::SkipEmptyParts))
        c.hybrid.staticSizes.push_back(part.trimmed().toInt());
    c.hybrid.maxStaticLength = m_hybridLength->value();
    c.hybrid.minStaticRate = m_hybridRate->value();
    take(c.hybrid.staticMaxWait, m_hybridWait);
    c.cache.enabled = m_cache->isChecked();
    c.cache.maxEntries = m_cacheEntries->value();
    if ((c.cache.maxBytes >> 20) != m_cacheMiB->value())
        c.cache.maxBytes = std::int64_t(m_cacheMiB->value()) << 20;
    c.memoryBatchLimit = m_memoryLimit->value();
    take(c.priorityAging, m_aging);
}

} // namespace bp::ui
