// Synthetic load from the console itself: an open-loop LoadGenerator
// (engine/workload/workload.h) with the rate, arrival process, lengths and
// max_new_tokens chosen here — and shared-prefix and multi-turn traffic: a
// shared system prompt, conversations whose later turns are closed loop
// (a think time after the previous answer), so an operator can tune with nothing else
// running. Edits while it runs restart it with the new shape (debounced).
// Lengths "from a trace" load the trace's rows from the store off the GUI
// thread first.
//
// Target: the embedded engine, or a remote server (Triton, vLLM, TGI,
// SGLang, another BatchPilot; docs/remote.md) chosen in the target
// selector. Remote traffic is recorded as a session of kind "remote" with
// the server's URL (remote/remote_load.h): every request stored, the
// server's /metrics scraped. Form edits while it runs restart the arrivals
// in the same session; Stop ends the session once the answers still on
// the wire are in (off the GUI thread; remoteSessionFinished follows).
//
// Capacity: at start-up the panel measures what the model sustains for its
// requests (capacity_probe.h, off the GUI thread), defaults the rate to 70%
// of it unless the operator chose a rate, and shows the offered load against
// it ("offered 30 req/s ≈ 0.66 of capacity ~45 req/s"), turning orange near
// capacity and red at or above it, or when the queue keeps growing.
#pragma once

#include "app/engine_bridge.h"
#include "capacity_probe.h"

#include "app/remote/remote_load.h"

#include "engine/workload/workload.h"

#include <QPointer>
#include <QTimer>
#include <QWidget>

#include <map>
#include <memory>
#include <vector>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QPushButton;
class QSettings;
class QSpinBox;
class QVBoxLayout;

namespace bp {
class TraceStore;
}

namespace bp::ui {

class RemoteTargetForm;
class TraceListModel;

class TrafficPanel : public QWidget {
    Q_OBJECT
public:
    // `traces` (optional) lists the imported traces to draw lengths from.
    TrafficPanel(app::EngineBridge &bridge, std::shared_ptr<TraceStore> store, TraceListModel *traces,
                 QWidget *parent = nullptr);
    ~TrafficPanel() override;

    bool running() const { return m_generator != nullptr || m_remoteLoad != nullptr; }
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
    QSpinBox *systemPromptBox() const { return m_systemPrompt; }
    QDoubleSpinBox *systemShareBox() const { return m_systemShare; }
    QSpinBox *conversationsBox() const { return m_conversations; }
    QSpinBox *turnsBox() const { return m_turns; }
    QDoubleSpinBox *thinkTimeBox() const { return m_think; }
    QPushButton *startButton() const { return m_start; }
    QLabel *loadLabel() const { return m_load; }
    QLabel *countersLabel() const { return m_counters; }
    QComboBox *targetBox() const { return m_targetBox; }
    RemoteTargetForm *remoteForm() const { return m_remoteForm; }
    // The target selector says "remote server".
    bool remoteTarget() const;
    // The running remote session's id; 0 when none runs.
    qint64 remoteSessionId() const;

    const CapacityEstimate &capacity() const { return m_capacity; }
    LoadLevel loadLevel() const;
    // The label's warning is up: offered >= capacity, or the queue keeps growing.
    bool warning() const { return m_warning; }

    // The form's values under the group "traffic" (traffic is never
    // started by restoring).
    void saveSettings(QSettings &settings) const;
    void restoreSettings(QSettings &settings);

public slots:
    void start();
    void stop();
    // As stop(), for a closing console: remote requests on the wire, also
    // those of sessions stopped earlier, are failed at once (shutting_down)
    // instead of waited for.
    void shutdown();
    void toggle();
    // Measures the capacity again (off the GUI thread); capacityMeasured follows.
    void measureCapacity();
    // Takes a capacity figure (what measureCapacity posts back).
    void setCapacity(const bp::ui::CapacityEstimate &estimate);
    // Watches the queue (connected to the bridge's snapshotReady).
    void observe(const bp::app::SnapshotPtr &snapshot);

signals:
    void runningChanged(bool running);
    void failed(const QString &message);
    void capacityMeasured(double requestsPerS);
    void capacityFailed(const QString &message);
    void warningChanged(bool on);
    // A remote session started recording / ended (every answer in, its
    // row closed).
    void remoteSessionStarted(qint64 sessionId, const QString &url);
    void remoteSessionFinished(qint64 sessionId);
    // An edit restarted the running load with the form's new shape.
    void restarted();

private:
    // The constructor's parts, in the order the widgets are made (their tab order).
    void addTargetRows();
    void addArrivalRows();
    void addLengthRows(int cap, TraceListModel *traces);
    void addMaxNewRow(const ModelInfo &model);
    void addConversationRows(int cap);
    void addStatusLines(QVBoxLayout *layout);
    void connectTimers();
    void connectForm();

    void stopLoad(bool cancelInFlight);
    void edited();
    void updateVisibility();
    void updateCounters();
    void launch(std::shared_ptr<const std::vector<TraceRow>> rows);
    void launchRemote(WorkloadSpec spec);
    // The load runs (local or remote): the button, the counters' refresh, runningChanged.
    void started();
    // Start failed with `message`: shown under the counters, the button released.
    void startFailed(const std::string &message);
    // What the form asks for, for the chosen target (its vocabulary and limits).
    WorkloadSpec targetSpec(std::shared_ptr<const std::vector<TraceRow>> rows) const;
    void updateLoad();
    int meanLength() const;

    app::EngineBridge &m_bridge;
    std::shared_ptr<TraceStore> m_store;
    std::unique_ptr<LoadGenerator> m_generator;
    std::unique_ptr<remote::RemoteLoad> m_remoteLoad;
    // Stopped remote sessions still waiting for their answers (shutdown()
    // fails those at once).
    std::vector<std::weak_ptr<remote::RemoteLoad>> m_finishing;
    std::shared_ptr<const std::vector<TraceRow>> m_rows; // the running load's trace rows
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
    QSpinBox *m_systemPrompt = nullptr, *m_conversations = nullptr, *m_turns = nullptr;
    QDoubleSpinBox *m_systemShare = nullptr, *m_think = nullptr;
    QPushButton *m_start = nullptr;
    QLabel *m_counters = nullptr;
    QLabel *m_error = nullptr;
    QLabel *m_load = nullptr;
    QFormLayout *m_form = nullptr;
    QComboBox *m_targetBox = nullptr;
    RemoteTargetForm *m_remoteForm = nullptr;

    CapacityEstimate m_capacity;
    QString m_capacityProblem;
    std::uint64_t m_probeGeneration = 0; // a newer measurement drops an older one's answer
    bool m_rateChosen = false;           // the operator set the rate: a measurement keeps it
    bool m_settingRate = false;          // the panel itself is setting the rate
    QueueTrend m_queue;
    bool m_warning = false;
};

} // namespace bp::ui
