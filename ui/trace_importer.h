// Imports a CSV trace into the store on a worker thread, with progress
// throttled to ~10 updates a second and cancel (nothing is stored then).
// A newer import supersedes a running one; the destructor cancels and waits.
#pragma once

#include "job_tracker.h"

#include "engine/store/trace_store.h"

#include <QObject>
#include <QThreadPool>

#include <atomic>
#include <memory>

namespace bp::ui {

class TraceImporter : public QObject {
    Q_OBJECT
public:
    explicit TraceImporter(std::shared_ptr<TraceStore> store, QObject *parent = nullptr);
    ~TraceImporter() override;

    void start(const QString &csvPath);
    void cancel();
    bool running() const { return m_jobs.isJobRunning(); }

signals:
    void progressChanged(int percent);
    void imported(const bp::ImportResult &result);
    void failed(const QString &message);

private:
    std::shared_ptr<TraceStore> m_store;
    QThreadPool m_pool;
    JobTracker m_jobs{this, &m_pool};
    std::shared_ptr<std::atomic<bool>> m_cancel;
};

} // namespace bp::ui

Q_DECLARE_METATYPE(bp::ImportResult)
