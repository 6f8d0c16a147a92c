// The control panel's adaptive section: queue delay from the arrival rate,
// the SLO (p99) controller, the hybrid policy's static layer, the response
// cache, and the hard limits (memory batch limit, priority aging). Reads
// and writes its part of a BatchingConfig; any edit emits edited() and the
// panel applies the whole form (same debounce, validation and undo).
#pragma once

#include "engine/batching_config.h"

#include <QWidget>

#include <functional>

class QCheckBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace bp::ui {

class DurationSpinBox;

class AdaptiveOptions : public QWidget {
    Q_OBJECT
public:
    // `errorLabel(field)` makes the label that shows the engine's reason for
    // a field prefix ("adaptive_delay", "slo", "hybrid", "cache", ...).
    AdaptiveOptions(const std::function<QLabel *(const QString &)> &errorLabel, QWidget *parent = nullptr);

    void setConfig(const BatchingConfig &config);
    void fill(BatchingConfig &config) const;

    QGroupBox *adaptiveDelayGroup() const { return m_adaptive; }
    QGroupBox *sloGroup() const { return m_slo; }
    QGroupBox *cacheGroup() const { return m_cache; }
    DurationSpinBox *sloTargetBox() const { return m_sloTarget; }
    QLineEdit *hybridSizesEdit() const { return m_hybridSizes; }

signals:
    void edited();

private:
    QGroupBox *m_adaptive = nullptr;
    DurationSpinBox *m_adaptiveMin = nullptr, *m_adaptiveMax = nullptr, *m_adaptivePeriod = nullptr;
    QDoubleSpinBox *m_adaptiveFill = nullptr;
    QGroupBox *m_slo = nullptr;
    DurationSpinBox *m_sloTarget = nullptr, *m_sloMaxDelay = nullptr, *m_sloPeriod = nullptr;
    QSpinBox *m_sloMinBatch = nullptr, *m_sloMaxBatch = nullptr;
    QLineEdit *m_hybridSizes = nullptr;
    QSpinBox *m_hybridLength = nullptr;
    QDoubleSpinBox *m_hybridRate = nullptr;
    DurationSpinBox *m_hybridWait = nullptr;
    QGroupBox *m_cache = nullptr;
    QSpinBox *m_cacheEntries = nullptr, *m_cacheMiB = nullptr;
    QSpinBox *m_memoryLimit = nullptr;
    DurationSpinBox *m_aging = nullptr;
};

} // namespace bp::ui
