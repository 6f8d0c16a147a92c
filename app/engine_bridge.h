// The Qt face of the engine. Owns nothing of the engine's threads: it polls
// Engine::snapshot() on its own worker thread (so the GUI thread never
// polls, and never waits on an engine lock 10 times a second) and delivers
// immutable snapshots to the GUI thread as values through queued signals.
// Config changes go the other way, on the calling (GUI) thread: applyPatch()
// takes the engine mutex once, for the few microseconds Engine::update
// needs to patch, validate and swap the config (no I/O, no waiting on
// batches under it).
//
// Optionally it samples the host next to each snapshot (NVML GPU
// utilization, process CPU) on the same worker thread, so no NVML call ever
// runs on the GUI thread.
#pragma once

#include "host_sampler.h"

#include "engine/exec/engine.h"

#include <QObject>
#include <QThread>

#include <memory>
#include <optional>

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

    // Applies `patch` to the engine's config in force (Engine::update: the
    // fields it names, nothing else). On success emits configApplied with
    // the config after it and returns what changed; on failure emits
    // configRejected with the reason and returns nullopt.
    std::optional<ConfigUpdate> applyPatch(const ConfigPatch &patch, const QString &origin);
    // Replaces the whole config (a loaded file): applyPatch(ConfigPatch::whole).
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
