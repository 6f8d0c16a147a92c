// Runs the tuner (engine/sim/tuner.h) for the Advisor dock on a worker
// thread: loads the calibration, plans the source's arrivals as a replay
// would (engine/replay/replay_plan.h), then searches in simulation with a
// throttled progress signal and a cancel flag the search checks between
// candidates. Starting another search cancels the running one and drops its
// result (JobTracker generation); destroying the runner cancels and waits,
// so no worker outlives it. The result reaches the GUI thread as a value.
#pragma once

#include "job_tracker.h"

#include "engine/sim/tuner.h"
#include "engine/replay/replayer.h"

#include <QObject>
#include <QString>
#include <QThreadPool>

#include <atomic>
#include <memory>

namespace bp::ui {

struct AdvisorRequest {
    ReplaySource source;
    double speed = 1;
    double lengthScale = 1; // input and output tokens multiplied (a long trace on a CPU)
    std::size_t limit = 0;  // the first N arrivals (0 = all)
    TuneSlo slo;
    TuneObjective objective = TuneObjective::Goodput;
    std::int64_t calibrationId = 0;
    // Knobs the search does not move (queue capacity, cache, ...) come from
    // here: the live config, so that a candidate applied live changes only
    // what was searched.
    BatchingConfig base;
    std::size_t budget = 240;
    int maxInstances = 2;
    int threads = 1; // parallel simulations
};

struct AdvisorResult {
    AdvisorRequest request;
    TuneResult tune;
    QString calibration; // "builtin:tiny-decoder (small, cpu, 2 threads), batch fit error 4.1%"
    std::size_t requests = 0;
    double offeredPerS = 0;    // the planned arrivals' rate
    std::int64_t tuningId = 0; // stored in `tunings` (a finished search; 0: cancelled)
};

class AdvisorSearch : public QObject {
    Q_OBJECT
public:
    explicit AdvisorSearch(std::shared_ptr<TraceStore> store, QObject *parent = nullptr);
    ~AdvisorSearch() override;

    void start(const AdvisorRequest &request);
    void cancel();
    bool running() const { return m_jobs.isJobRunning(); }

    // The knobs the search moves (knob-table names): what "Apply live" sets.
    static const std::vector<std::string> &searchedKnobs();

signals:
    void progressChanged(int done, int total);
    // Also after a cancel (tune.cancelled, with what was evaluated).
    void finished(const bp::ui::AdvisorResult &result);
    void failed(const QString &message);

private:
    std::shared_ptr<TraceStore> m_store;
    QThreadPool m_pool;
    JobTracker m_jobs{this, &m_pool};
    std::shared_ptr<std::atomic<bool>> m_cancel;
};

} // namespace bp::ui

Q_DECLARE_METATYPE(bp::ui::AdvisorResult)
