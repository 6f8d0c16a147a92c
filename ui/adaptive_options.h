// The control panel's adaptive section: queue delay from the arrival rate,
// the SLO (p99) controller, the hybrid policy's static layer, the response
// cache, and the hard limits (memory batch limit, priority aging). Its
// editors come from the knob table through the panel's KnobForm (ranges,
// steps, units, tooltips); this class only lays them out. Any edit emits the
// form's edited() and the panel applies the whole form (same debounce,
// validation and undo).
#pragma once

#include <QWidget>

#include <functional>

class QGroupBox;
class QLabel;
class QLineEdit;

namespace bp::ui {

class DurationSpinBox;
class KnobForm;

class AdaptiveOptions : public QWidget {
    Q_OBJECT
public:
    // `errorLabel(field)` makes the label that shows the engine's reason for
    // a field prefix ("adaptive_delay", "slo", "hybrid", "cache", ...).
    AdaptiveOptions(KnobForm &form, const std::function<QLabel *(const QString &)> &errorLabel,
                    QWidget *parent = nullptr);

    QGroupBox *adaptiveDelayGroup() const { return m_adaptive; }
    QGroupBox *sloGroup() const { return m_slo; }
    QGroupBox *cacheGroup() const { return m_cache; }
    DurationSpinBox *sloTargetBox() const;
    QLineEdit *hybridSizesEdit() const;

private:
    KnobForm &m_form;
    QGroupBox *m_adaptive = nullptr;
    QGroupBox *m_slo = nullptr;
    QGroupBox *m_cache = nullptr;
};

} // namespace bp::ui
