// Runs the tune pipeline (engine/sim/tune/tune_pipeline.h) for the Advisor dock
// on a worker thread: the search (plan the source, search in simulation,
// store the result) with a throttled progress signal, and on demand the
// verification of a candidate (a real-clock replay of a window of the
// source on the console's model) with its expected duration announced
// first. Cancel stops either: a cancelled search reports what it evaluated,
// a cancelled verification keeps what it verified (partial, stored).
// Starting another job drops the result of the running one (JobTracker
// generation); destroying the runner cancels and waits, so no worker
// outlives it. Results reach the GUI thread as values.
#pragma once

#include "job_tracker.h"

#include "engine/sim/tune/tune_pipeline.h"

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
    int threads = 1;               // parallel simulations
    VerifyWindowSpec verifyWindow; // what "Verify" replays (default the busiest 3 minutes)
};

struct AdvisorResult {
    AdvisorRequest request;
    TuneResult tune;
    QString calibration; // "builtin:tiny-decoder (small, cpu, 2 threads) #3, batch fit error 4.1% (median)"
    std::size_t requests = 0;
    double offeredPerS = 0;    // the planned arrivals' rate
    std::int64_t tuningId = 0; // stored in `tunings` (0: nothing evaluated)
    QString warning;           // arrivals beyond what the calibration measured ("" none)
    QString interval; // the recommendation's latency with the fit's spread, how to narrow it ("" none)
    // The pipeline's state, for verifying a candidate later.
    std::shared_ptr<const TuneRun> run;
    // The recommendation's verification over request.verifyWindow, planned:
    // what it would replay and how long it would take.
    std::optional<VerifyPlan> verifyPlan;
};

struct AdvisorVerification {
    Verification verification;
    std::shared_ptr<const TuneRun> run; // with the verification stored in its document
};

class AdvisorSearch : public QObject {
    Q_OBJECT
public:
    explicit AdvisorSearch(std::shared_ptr<TraceStore> store, QObject *parent = nullptr);
    ~AdvisorSearch() override;

    void start(const AdvisorRequest &request);
    // Verifies `candidate` of `result` over `window` on `backend` (the
    // calibration's model).
    void verify(const AdvisorResult &result, std::size_t candidate, const VerifyWindowSpec &window,
                std::shared_ptr<Backend> backend);
    void cancel();
    bool running() const { return m_jobs.isJobRunning(); }

    // The knobs the search moves (knob-table names): what "Apply live" sets.
    static const std::vector<std::string> &searchedKnobs();

signals:
    void progressChanged(int done, int total);
    // Also after a cancel (tune.cancelled, with what was evaluated).
    void finished(const bp::ui::AdvisorResult &result);
    void failed(const QString &message);
    // The verification's window and expected duration, before it starts.
    void verificationStarted(const bp::VerifyPlan &plan);
    void verificationProgress(int finished, int total);
    // Also after a cancel (verification.partial).
    void verified(const bp::ui::AdvisorVerification &result);

private:
    template <typename Job, typename Done> void startJob(Job job, Done done);

    std::shared_ptr<TraceStore> m_store;
    QThreadPool m_pool;
    JobTracker m_jobs{this, &m_pool};
    std::shared_ptr<std::atomic<bool>> m_cancel;
};

} // namespace bp::ui

Q_DECLARE_METATYPE(bp::ui::AdvisorResult)
Q_DECLARE_METATYPE(bp::ui::AdvisorVerification)
Q_DECLARE_METATYPE(bp::VerifyPlan)
