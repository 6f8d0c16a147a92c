#include "duration_spin_box.h"

#include <QLineEdit>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>

namespace bp::ui {

namespace {
constexpr qint64 kMs = 1000, kS = 1'000'000;

QString number(double v)
{
    // Up to three decimals, trailing zeros dropped: 1.5, 0.25, 12
    QString s = QString::number(v, 'f', 3);
    while (s.contains('.') && (s.endsWith('0') || s.endsWith('.')))
        s.chop(1);
    return s;
}

const QRegularExpression &pattern()
{
    static const QRegularExpression re(
        QStringLiteral("^\\s*(\\d+(?:\\.\\d*)?|\\.\\d+)\\s*(us|µs|μs|ms|s)?\\s*$"),
        QRegularExpression::CaseInsensitiveOption);
    return re;
}
} // namespace

DurationSpinBox::DurationSpinBox(QWidget *parent) : QAbstractSpinBox(parent)
{
    setKeyboardTracking(true);
    setAccelerated(false);
    connect(lineEdit(), &QLineEdit::textEdited, this, &DurationSpinBox::textEdited);
    connect(this, &QAbstractSpinBox::editingFinished, this, &DurationSpinBox::showValue);
    showValue();
}

QString DurationSpinBox::format(qint64 us)
{
    if (us < kMs)
        return QStringLiteral("%1 µs").arg(us);
    if (us < kS)
        return QStringLiteral("%1 ms").arg(number(double(us) / kMs));
    return QStringLiteral("%1 s").arg(number(double(us) / kS));
}

std::optional<qint64> DurationSpinBox::parse(const QString &text, qint64 defaultUnitUs)
{
    const auto m = pattern().match(text);
    if (!m.hasMatch())
        return std::nullopt;
    bool ok = false;
    const double v = m.captured(1).toDouble(&ok);
    if (!ok)
        return std::nullopt;
    const QString unit = m.captured(2).toLower();
    const qint64 scale = unit.isEmpty()                ? defaultUnitUs
                         : unit == QLatin1String("s")  ? kS
                         : unit == QLatin1String("ms") ? kMs
                                                       : 1;
    const double us = std::round(v * double(scale));
    if (us > 9e15)
        return std::nullopt;
    return qint64(us);
}

qint64 DurationSpinBox::ladderStep(qint64 us, int steps)
{
    // 0, 1, 2, 5, 10, 20, 50, ... µs
    auto ladder = [](int i) -> qint64 {
        if (i <= 0)
            return 0;
        static constexpr qint64 m[3] = {1, 2, 5};
        qint64 decade = 1;
        for (int d = 0; d < (i - 1) / 3; ++d)
            decade *= 10;
        return m[(i - 1) % 3] * decade;
    };
    int i = 0;
    while (ladder(i) < us && i < 45)
        ++i; // ladder(i) >= us
    if (steps > 0)
        return ladder((ladder(i) == us ? i : i - 1) + steps);
    return ladder(std::max(0, i + steps));
}

qint64 DurationSpinBox::unitOf(qint64 us) const
{
    return us < kMs ? 1 : us < kS ? kMs : kS;
}

void DurationSpinBox::setValueUs(qint64 us)
{
    us = std::clamp<qint64>(us, m_minUs, std::max(m_minUs, m_maxUs));
    const bool changed = us != m_us;
    m_us = us;
    showValue();
    if (changed)
        emit valueChanged(m_us);
}

void DurationSpinBox::setMaximumUs(qint64 us)
{
    m_maxUs = std::max<qint64>(us, 0);
    if (m_us > m_maxUs)
        setValueUs(m_maxUs);
}

void DurationSpinBox::setMinimumUs(qint64 us)
{
    m_minUs = std::max<qint64>(us, 0);
    if (m_us < m_minUs)
        setValueUs(m_minUs);
}

void DurationSpinBox::showValue()
{
    lineEdit()->setText(format(m_us));
}

void DurationSpinBox::textEdited(const QString &text)
{
    const auto us = parse(text, unitOf(m_us));
    if (!us || *us > m_maxUs || *us < m_minUs || *us == m_us)
        return;
    m_us = *us; // the text stays as typed until editing finishes
    emit valueChanged(m_us);
}

void DurationSpinBox::stepBy(int steps)
{
    setValueUs(std::clamp(ladderStep(m_us, steps), m_minUs, m_maxUs));
    selectAll();
}

QAbstractSpinBox::StepEnabled DurationSpinBox::stepEnabled() const
{
    StepEnabled e = StepNone;
    if (m_us > m_minUs)
        e |= StepDownEnabled;
    if (m_us < m_maxUs)
        e |= StepUpEnabled;
    return e;
}

QValidator::State DurationSpinBox::validate(QString &input, int &) const
{
    if (const auto us = parse(input, unitOf(m_us)))
        return *us <= m_maxUs && *us >= m_minUs ? QValidator::Acceptable : QValidator::Intermediate;
    // A number with a unit being typed ("5 m", "2 µ") or nothing yet.
    static const QRegularExpression partial(QStringLiteral("^\\s*(\\d*(\\.\\d*)?)?\\s*(u|µ|μ|m)?\\s*$"),
                                            QRegularExpression::CaseInsensitiveOption);
    return partial.match(input).hasMatch() ? QValidator::Intermediate : QValidator::Invalid;
}

void DurationSpinBox::fixup(QString &input) const
{
    input = format(m_us);
}

void DurationSpinBox::focusOutEvent(QFocusEvent *event)
{
    QAbstractSpinBox::focusOutEvent(event);
    showValue();
}

QSize DurationSpinBox::sizeHint() const
{
    QSize s = QAbstractSpinBox::sizeHint();
    s.setWidth(std::max(s.width(), fontMetrics().horizontalAdvance(QStringLiteral("999.999 ms")) + 40));
    return s;
}

} // namespace bp::ui
