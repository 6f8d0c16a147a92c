// Synthetic load from the console itself: an open-loop LoadGenerator
// (engine/workload.h) with the rate, arrival process, lengths and
// max_new_tokens chosen here, so an operator can tune with nothing else
// running. Edits while it runs restart it with the new shape (debounced).
// Lengths "from a trace" load the trace's rows from the store off the GUI
// thread first.
#pragma once

#include "app/engine_bridge.h"

#include "engine/workload.h"

#include <QPointer>
#include <QTimer>
#include <QWidget>

#include <map>
#include <memory>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QPushButton;
class QSettings;
class QSpinBox;

namespace bp {
class TraceStore;
}

namespace bp::ui {

class TraceListModel;

class TrafficPanel : public QWidget {
    Q_OBJECT
public:
    // `traces` (optional) lists the imported traces to draw lengths from.
    TrafficPanel(app::EngineBridge &bridge, std::shared_ptr<TraceStore> store, TraceListModel *traces,
                 QWidget *parent = nullptr);
    ~TrafficPanel() override;

    bool running() const { return m_generator != nullptr; }
    // What the form asks for (trace rows not included).
    WorkloadSpec formSpec() const;
    LoadGenerator::Counters counters() const;

    QDoubleSpinBox *rateBox() const { return m_rate; }
    QComboBox *arrivalsBox() const { return m_arrivals; }
    QSpinBox *burstSizeBox() const { return m_burst; }
    QComboBox *lengthsBox() const { return m_lengths; }
    QSpinBox *fixedLengthBox() const { return m_fixed; }
    QSpinBox *minLengthBox() const { return m_min; }
    QSpinBox *maxLengthBox() const { return m_max; }
    QComboBox *traceBox() const { return m_trace; }
    QSpinBox *maxNewTokensBox() const { return m_maxNew; }
    QPushButton *startButton() const { return m_start; }

    // The form's values under the group "traffic" (traffic is never
    // started by restoring).
    void saveSettings(QSettings &settings) const;
    void restoreSettings(QSettings &settings);

public slots:
    void start();
    void stop();
    void toggle();

signals:
    void runningChanged(bool running);
    void failed(const QString &message);

private:
    void edited();
    void updateVisibility();
    void updateCounters();
    void launch(std::shared_ptr<const std::vector<TraceRow>> rows);

    app::EngineBridge &m_bridge;
    std::shared_ptr<TraceStore> m_store;
    std::unique_ptr<LoadGenerator> m_generator;
    std::map<qint64, std::shared_ptr<const std::vector<TraceRow>>> m_traceRows; // loaded traces by id
    std::uint64_t m_seed = 1;
    std::uint64_t m_loadGeneration = 0; // a newer start or a stop drops a pending trace load
    LoadGenerator::Counters m_before;   // totals of earlier generators
    QTimer m_restart;
    QTimer m_refresh;

    QDoubleSpinBox *m_rate = nullptr;
    QComboBox *m_arrivals = nullptr;
    QSpinBox *m_burst = nullptr;
    QComboBox *m_lengths = nullptr;
    QSpinBox *m_fixed = nullptr, *m_min = nullptr, *m_max = nullptr;
    QComboBox *m_trace = nullptr;
    QDoubleSpinBox *m_lengthScale = nullptr;
    QSpinBox *m_maxNew = nullptr;
    QPushButton *m_start = nullptr;
    QLabel *m_counters = nullptr;
    QLabel *m_error = nullptr;
    QFormLayout *m_form = nullptr;
};

} // namespace bp::ui
