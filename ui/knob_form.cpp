#include "knob_form.h"

#include "duration_spin_box.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QGroupBox>
#include <QLineEdit>
#include <QSpinBox>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace bp::ui {

namespace {

const Knob &knobOf(std::string_view key)
{
    const Knob *k = findKnob(key);
    if (!k) {
        std::fprintf(stderr, "KnobForm: no knob '%.*s' in engine/config/knob_table.cpp\n", int(key.size()),
                     key.data());
        std::abort();
    }
    return *k;
}

// The table's doc strings are Markdown fragments: "`none`, `static` ..."
QString plain(std::string_view text)
{
    return QString::fromUtf8(text.data(), qsizetype(text.size())).remove(QLatin1Char('`'));
}

QString sentence(std::string_view doc)
{
    QString s = plain(doc);
    if (!s.isEmpty())
        s[0] = s[0].toUpper();
    return s.endsWith(QLatin1Char('.')) ? s : s + QLatin1Char('.');
}

qint64 shownUs(const Knob &k, const BatchingConfig &c)
{
    return std::llround(k.get(c)); // the box shows whole microseconds
}

std::vector<int> parseList(const QString &text)
{
    // Unparsable entries become 0, which validate() refuses with its reason.
    std::vector<int> items;
    for (const QString &part : text.split(QLatin1Char(','), Qt::SkipEmptyParts))
        items.push_back(part.trimmed().toInt());
    return items;
}

QString listText(const std::vector<int> &items)
{
    QStringList parts;
    for (int v : items)
        parts << QString::number(v);
    return parts.join(QLatin1Char(','));
}

} // namespace

KnobForm::KnobForm(QObject *parent) : QObject(parent) {}

QString KnobForm::unitText(const Knob &k, const QString &unit)
{
    if (!unit.isEmpty())
        return unit;
    return QString::fromUtf8(k.unit.data(), qsizetype(k.unit.size()));
}

int KnobForm::decimals(const Knob &k)
{
    const double step = k.step > 0 ? k.step : 0.01;
    int d = 0;
    while (d < 6 && std::abs(step * std::pow(10.0, d) - std::round(step * std::pow(10.0, d))) > 1e-9)
        ++d;
    return d;
}

double KnobForm::editorStep(const Knob &k, double scale)
{
    switch (k.type) {
    case KnobType::Double: return k.step > 0 ? k.step : 0.01;
    case KnobType::Duration: return k.step; // 0: the 1-2-5 ladder
    default: return std::max(1.0, std::round((k.step > 0 ? k.step : 1) / scale));
    }
}

double KnobForm::editorMinimum(const Knob &k, double scale)
{
    if (k.type == KnobType::Double)
        return k.lo + (k.loKind == BoundKind::Exclusive ? std::pow(10.0, -decimals(k)) : 0);
    const double lo = std::ceil(k.lo / scale - 1e-9);
    return k.loKind == BoundKind::Exclusive && lo * scale <= k.lo ? lo + 1 : lo;
}

double KnobForm::editorMaximum(const Knob &k, double scale)
{
    if (k.type == KnobType::Double)
        return k.hi - (k.hiKind == BoundKind::Exclusive ? std::pow(10.0, -decimals(k)) : 0);
    const double hi = std::floor(k.hi / scale + 1e-9);
    return k.hiKind == BoundKind::Exclusive && hi * scale >= k.hi ? hi - 1 : hi;
}

QString KnobForm::toolTip(const Knob &k, double scale, const QString &unit)
{
    const BatchingConfig defaults;
    QString range = plain(formatKnobRange(k));
    const QString tableUnit = unitText(k);
    if (k.type != KnobType::Duration && !tableUnit.isEmpty())
        range += QLatin1Char(' ') + tableUnit;
    if (scale != 1)
        range += tr(" (shown in %1)").arg(unitText(k, unit));
    QString tip = sentence(k.doc);
    tip += QLatin1Char('\n') + tr("Range: %1. Default: %2.").arg(range, plain(formatKnobValue(k, defaults)));
    tip += QLatin1Char('\n') + tr("Policies: %1. Key: %2").arg(plain(knobPolicies(k)), plain(k.key));
    if (k.type == KnobType::Duration)
        tip += QLatin1Char('\n') + tr("Type e.g. 250 µs, 5 ms or 1.5 s; the arrows step 1-2-5.");
    return tip;
}

KnobForm::Field &KnobForm::bind(std::string_view key, QWidget *editor, double scale, const QString &unit,
                                bool managed)
{
    const Knob &k = knobOf(key);
    editor->setProperty(kKnobProperty, QString::fromUtf8(key.data(), qsizetype(key.size())));
    editor->setToolTip(toolTip(k, scale, unit));
    Field &f = m_fields[std::string(key)];
    f = Field{&k, editor, scale, managed};
    return f;
}

QWidget *KnobForm::add(std::string_view key, QWidget *parent, double scale, const QString &unit)
{
    const Knob &k = knobOf(key);
    QWidget *editor = nullptr;
    switch (k.type) {
    case KnobType::Int: {
        auto *box = new QSpinBox(parent);
        box->setRange(int(editorMinimum(k, scale)), int(editorMaximum(k, scale)));
        box->setSingleStep(int(editorStep(k, scale)));
        box->setKeyboardTracking(true);
        if (const QString u = unitText(k, unit); !u.isEmpty())
            box->setSuffix(QLatin1Char(' ') + u);
        connect(box, &QSpinBox::valueChanged, this, &KnobForm::changed);
        editor = box;
        break;
    }
    case KnobType::Double: {
        auto *box = new QDoubleSpinBox(parent);
        box->setDecimals(decimals(k));
        box->setRange(editorMinimum(k), editorMaximum(k));
        box->setSingleStep(editorStep(k));
        box->setKeyboardTracking(true);
        if (const QString u = unitText(k, unit); !u.isEmpty())
            box->setSuffix(QLatin1Char(' ') + u);
        connect(box, &QDoubleSpinBox::valueChanged, this, &KnobForm::changed);
        editor = box;
        break;
    }
    case KnobType::Duration: {
        auto *box = new DurationSpinBox(parent);
        box->setMaximumUs(qint64(editorMaximum(k)));
        box->setMinimumUs(qint64(editorMinimum(k)));
        connect(box, &DurationSpinBox::valueChanged, this, &KnobForm::changed);
        editor = box;
        break;
    }
    case KnobType::Bool: {
        auto *box = new QCheckBox(parent);
        connect(box, &QCheckBox::toggled, this, &KnobForm::changed);
        editor = box;
        break;
    }
    case KnobType::Policy: {
        auto *box = new QComboBox(parent);
        for (int i = int(k.lo); i <= int(k.hi); ++i)
            box->addItem(QString::fromUtf8(policyName(PolicyKind(i)).data()), i);
        connect(box, &QComboBox::currentIndexChanged, this, &KnobForm::changed);
        editor = box;
        break;
    }
    case KnobType::Text: {
        auto *box = new QComboBox(parent);
        for (std::string_view choice : k.choices)
            box->addItem(QString::fromUtf8(choice.data(), qsizetype(choice.size())));
        connect(box, &QComboBox::currentIndexChanged, this, &KnobForm::changed);
        editor = box;
        break;
    }
    case KnobType::IntList: {
        auto *edit = new QLineEdit(parent);
        edit->setPlaceholderText(QStringLiteral("8,16,32"));
        connect(edit, &QLineEdit::textEdited, this, &KnobForm::changed);
        editor = edit;
        break;
    }
    }
    bind(key, editor, scale, unit, true);
    return editor;
}

QGroupBox *KnobForm::addGroup(std::string_view key, const QString &title, QWidget *parent)
{
    if (knobOf(key).type != KnobType::Bool) {
        std::fprintf(stderr, "KnobForm: '%.*s' is not a bool knob\n", int(key.size()), key.data());
        std::abort();
    }
    auto *group = new QGroupBox(title, parent);
    group->setCheckable(true);
    connect(group, &QGroupBox::toggled, this, &KnobForm::changed);
    bind(key, group, 1, {}, true);
    return group;
}

void KnobForm::attach(std::string_view key, QWidget *editor)
{
    bind(key, editor, 1, {}, false);
}

QWidget *KnobForm::editor(std::string_view key) const
{
    auto it = m_fields.find(key);
    return it == m_fields.end() ? nullptr : it->second.editor;
}

double KnobForm::scale(std::string_view key) const
{
    auto it = m_fields.find(key);
    return it == m_fields.end() ? 1 : it->second.scale;
}

void KnobForm::changed()
{
    if (!m_filling)
        emit edited();
}

void KnobForm::setConfig(const BatchingConfig &c)
{
    m_filling = true;
    for (auto &[key, f] : m_fields) {
        if (!f.managed)
            continue;
        const Knob &k = *f.knob;
        if (auto *g = qobject_cast<QGroupBox *>(f.editor))
            g->setChecked(k.get(c) != 0);
        else if (auto *b = qobject_cast<QCheckBox *>(f.editor))
            b->setChecked(k.get(c) != 0);
        else if (auto *s = qobject_cast<QSpinBox *>(f.editor))
            s->setValue(int(std::llround(k.get(c) / f.scale)));
        else if (auto *d = qobject_cast<QDoubleSpinBox *>(f.editor))
            d->setValue(k.get(c));
        else if (auto *t = qobject_cast<DurationSpinBox *>(f.editor))
            t->setValueUs(shownUs(k, c));
        else if (auto *p = qobject_cast<QComboBox *>(f.editor); p && k.type == KnobType::Text)
            p->setCurrentIndex(p->findText(QString::fromStdString(k.text(c))));
        else if (p)
            p->setCurrentIndex(p->findData(int(k.get(c))));
        else if (auto *e = qobject_cast<QLineEdit *>(f.editor))
            e->setText(listText(k.items(c)));
    }
    m_filling = false;
}

void KnobForm::fill(BatchingConfig &c) const
{
    for (const auto &[key, f] : m_fields) {
        if (!f.managed)
            continue;
        const Knob &k = *f.knob;
        if (auto *g = qobject_cast<QGroupBox *>(f.editor)) {
            k.set(c, g->isChecked() ? 1 : 0);
        } else if (auto *b = qobject_cast<QCheckBox *>(f.editor)) {
            k.set(c, b->isChecked() ? 1 : 0);
        } else if (auto *s = qobject_cast<QSpinBox *>(f.editor)) {
            if (std::llround(k.get(c) / f.scale) != s->value())
                k.set(c, double(s->value()) * f.scale);
        } else if (auto *d = qobject_cast<QDoubleSpinBox *>(f.editor)) {
            if (d->valueFromText(d->textFromValue(k.get(c))) != d->value())
                k.set(c, d->value());
        } else if (auto *t = qobject_cast<DurationSpinBox *>(f.editor)) {
            if (shownUs(k, c) != t->valueUs())
                k.set(c, double(t->valueUs()));
        } else if (auto *p = qobject_cast<QComboBox *>(f.editor); p && k.type == KnobType::Text) {
            if (p->currentIndex() >= 0 && p->currentText() != QString::fromStdString(k.text(c)))
                k.setText(c, p->currentText().toStdString());
        } else if (p) {
            k.set(c, p->currentData().toInt());
        } else if (auto *e = qobject_cast<QLineEdit *>(f.editor)) {
            if (std::vector<int> items = parseList(e->text()); items != k.items(c))
                k.itemsMut(c) = std::move(items);
        }
    }
}

} // namespace bp::ui
