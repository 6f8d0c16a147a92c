// Runs a replay (engine/replay/replayer.h) on a worker thread with throttled
// progress and cancel. Starting another replay cancels the running one and
// drops its result (JobTracker generation); destroying the runner cancels
// and waits, so no worker outlives it.
#pragma once

#include "job_tracker.h"

#include "app/remote/http_remote_target.h"
#include "engine/replay/replayer.h"

#include <QObject>
#include <QThreadPool>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>

namespace bp::ui {

class ReplayRunner : public QObject {
    Q_OBJECT
public:
    // Called on the worker thread; must be thread-safe.
    using BackendFactory = std::function<Result<std::shared_ptr<Backend>>()>;

    ReplayRunner(std::shared_ptr<TraceStore> store, BackendFactory backend, QObject *parent = nullptr);
    // Wraps `make` so the model is built once (on first use, on a worker
    // thread) and shared by every later replay.
    static BackendFactory cached(BackendFactory make);
    ~ReplayRunner() override;

    // With `remote`, the replay drives that server instead of the model
    // (Replayer::runRemote; the backend factory is not used).
    void start(const ReplayOptions &options,
               const std::optional<remote::RemoteOptions> &remote = std::nullopt);
    void cancel();
    bool running() const { return m_jobs.isJobRunning(); }
    int percent() const { return m_percent; }

signals:
    void progressChanged(int percent, const QString &text);
    void finished(const bp::ReplayOutcome &outcome);
    void failed(const QString &message);

private:
    std::shared_ptr<TraceStore> m_store;
    BackendFactory m_backend;
    QThreadPool m_pool;
    JobTracker m_jobs{this, &m_pool};
    std::shared_ptr<std::atomic<bool>> m_cancel;
    int m_percent = 0;
};

} // namespace bp::ui

Q_DECLARE_METATYPE(bp::ReplayOutcome)
