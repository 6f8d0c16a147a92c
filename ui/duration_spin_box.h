// A spin box for durations from microseconds to seconds, shown and typed in
// readable units: "250 µs", "5 ms", "1.5 s" (a bare number keeps the unit
// shown). The arrows step along 1-2-5 (… 500 µs, 1 ms, 2 ms, 5 ms …).
// The box holds a duration in [minimumUs(), maximumUs()]; the console sets
// both from the knob table (ui/knob_form.h). Cross-field rules (min <= max)
// stay with the engine's validate(), whose reason the console shows.
#pragma once

#include <QAbstractSpinBox>

#include <optional>

namespace bp::ui {

class DurationSpinBox : public QAbstractSpinBox {
    Q_OBJECT
public:
    explicit DurationSpinBox(QWidget *parent = nullptr);

    qint64 valueUs() const { return m_us; }
    void setValueUs(qint64 us); // emits valueChanged when it changes
    qint64 maximumUs() const { return m_maxUs; }
    void setMaximumUs(qint64 us);
    qint64 minimumUs() const { return m_minUs; }
    void setMinimumUs(qint64 us);

    // "250 µs", "5 ms", "1.5 s"
    static QString format(qint64 us);
    // Microseconds, or nullopt; `defaultUnitUs` scales a bare number.
    static std::optional<qint64> parse(const QString &text, qint64 defaultUnitUs);
    // The next 1-2-5 value above (steps > 0) or below `us`.
    static qint64 ladderStep(qint64 us, int steps);

    void stepBy(int steps) override;
    QValidator::State validate(QString &input, int &pos) const override;
    void fixup(QString &input) const override;
    QSize sizeHint() const override;

signals:
    void valueChanged(qint64 us);

protected:
    StepEnabled stepEnabled() const override;
    void focusOutEvent(QFocusEvent *event) override;

private:
    void textEdited(const QString &text);
    void showValue();
    qint64 unitOf(qint64 us) const;

    qint64 m_us = 0;
    qint64 m_minUs = 0;
    qint64 m_maxUs = 3'600'000'000; // an hour
};

} // namespace bp::ui
