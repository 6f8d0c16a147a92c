// The Qt face of the engine. Owns nothing of the engine's threads: it polls
// Engine::snapshot() on its own worker thread (so the GUI thread never waits
// on an engine lock) and delivers immutable snapshots to the GUI thread as
// values through queued signals. Config changes go the other way.
//
// Optionally it samples the host next to each snapshot (NVML GPU
// utilization, process CPU) on the same worker thread, so no NVML call ever
// runs on the GUI thread.
#pragma once

#include "host_sampler.h"

#include "engine/engine.h"

#include <QObject>
#include <QThread>

#include <memory>

namespace bp::app {

using SnapshotPtr = std::shared_ptr<const Snapshot>;

class SnapshotPoller;

class EngineBridge : public QObject {
    Q_OBJECT
public:
    // `engine` must outlive the bridge.
    explicit EngineBridge(Engine &engine, QObject *parent = nullptr);
    ~EngineBridge() override;

    Engine &engine() const { return m_engine; }
    SnapshotPtr latest() const { return m_latest; }
    void setPollInterval(int ms);
    // Starts emitting hostSampleReady() before every snapshotReady(). An
    // empty `nvmlLibrary` samples only the process CPU. Call once.
    void startHostSampling(const QString &nvmlLibrary, unsigned gpuIndex);

    // Validates and applies; on failure emits configRejected with the reason.
    bool applyConfig(const BatchingConfig &config, const QString &origin);

signals:
    void snapshotReady(const bp::app::SnapshotPtr &snapshot);
    void hostSampleReady(const bp::app::HostSample &sample);
    void configApplied(const bp::BatchingConfig &config);
    void configRejected(const QString &reason);

private:
    Engine &m_engine;
    QThread m_thread;
    SnapshotPoller *m_poller = nullptr; // lives on m_thread
    SnapshotPtr m_latest;
};

} // namespace bp::app

Q_DECLARE_METATYPE(bp::app::SnapshotPtr)
Q_DECLARE_METATYPE(bp::BatchingConfig)
Q_DECLARE_METATYPE(bp::app::HostSample)
