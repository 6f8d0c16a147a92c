#include "replayer.h"
#include "replay_plan.h"

#include "engine/store/session_summary.h"
#include "remote_session.h"

#include "engine/config/config_json.h"

#include <cmath>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace bp {

namespace {

constexpr Duration kCancelSlice = std::chrono::milliseconds(50);

// Counts outcomes from completion callbacks (engine threads).
struct Tally {
    std::mutex mutex;
    std::condition_variable cv;
    std::size_t completed = 0, failed = 0; // guarded by mutex
    Completion callback()
    {
        return [this](Response &&r) {
            std::lock_guard lock(mutex);
            ++(r.status.isOk() ? completed : failed);
            cv.notify_all();
        };
    }
    std::size_t done()
    {
        std::lock_guard lock(mutex);
        return completed + failed;
    }
};

// Keeps the calling thread's timer slack at 1 ns while pacing, then restores it.
class TimerSlack {
public:
    TimerSlack()
    {
#ifdef __linux__
        m_old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
        prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
    }
    ~TimerSlack()
    {
#ifdef __linux__
        if (m_old > 0)
            prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(m_old), 0, 0, 0);
#endif
    }

private:
    long m_old = 0;
};

bool cancelled(const std::atomic<bool> *cancel)
{
    return cancel && cancel->load(std::memory_order_relaxed);
}

// Where the Driver's requests go: Engine::submit, or RemoteTarget::submit
// (replay_target.h). Same contract: non-OK = refused, else one completion.
using SubmitFn = std::function<Status(Request, Completion)>;

class Driver {
public:
    Driver(SubmitFn submit, int vocabSize, const ReplayOptions &options,
           const std::vector<PlannedRequest> &plan, const Replayer::ProgressFn &progress,
           const std::atomic<bool> *cancel)
        : m_submit(std::move(submit)), m_vocabSize(vocabSize), m_options(options), m_plan(plan),
          m_progress(progress), m_cancel(cancel), m_rng(options.seed)
    {
        m_outcome.total = plan.size();
    }

    // `drain`, when given, runs on a thread of its own once the last
    // request is submitted, while this thread waits for the completions and
    // keeps reporting progress: the embedded engine's shutdown(Drain), which
    // flushes what no policy would dispatch without more arrivals (a partial
    // `static` batch used to hang the replay here forever). A cancel during
    // that tail waits for the drain to finish.
    ReplayOutcome runReal(const std::function<void()> &drain = {});
    // The embedded engine only: a discrete-event simulation on `clock`.
    ReplayOutcome runVirtual(Engine &engine, SessionRecorder &recorder, FakeClock &clock);
    // Completions counted so far (ok, not ok).
    std::pair<std::size_t, std::size_t> tally()
    {
        std::lock_guard lock(m_tally.mutex);
        return {m_tally.completed, m_tally.failed};
    }

private:
    void submit(std::size_t index, TimePoint arrival);
    void report(bool force);
    void waitForCompletions();

    const SubmitFn m_submit;
    const int m_vocabSize;
    const ReplayOptions &m_options;
    const std::vector<PlannedRequest> &m_plan;
    const Replayer::ProgressFn &m_progress;
    const std::atomic<bool> *m_cancel;
    std::mt19937_64 m_rng;
    Tally m_tally;
    ReplayOutcome m_outcome;
    double m_sourceS = 0;
    TimePoint m_lastReport{};
};

void Driver::submit(std::size_t i, TimePoint arrival)
{
    const PlannedRequest &p = m_plan[i];
    Request r;
    r.id = i + 1; // the position in the source: requests.request_id of the replay
    r.tokens.resize(std::size_t(p.inputTokens));
    std::uniform_int_distribution<TokenId> token(0, std::max(1, m_vocabSize) - 1);
    for (TokenId &t : r.tokens)
        t = token(m_rng);
    r.maxNewTokens = p.maxNewTokens;
    r.arrival = arrival;
    ++m_outcome.submitted;
    m_sourceS = p.sourceS;
    if (m_submit(std::move(r), m_tally.callback()).isOk())
        ++m_outcome.accepted;
    else
        ++m_outcome.rejected;
}

void Driver::report(bool force)
{
    if (!m_progress)
        return;
    const TimePoint now = SteadyClock::now();
    if (!force && now - m_lastReport < m_options.progressInterval)
        return;
    m_lastReport = now;
    ReplayProgress p;
    p.total = m_plan.size();
    p.submitted = m_outcome.submitted;
    p.finished = m_outcome.rejected + m_tally.done();
    p.sourceSeconds = m_sourceS;
    m_progress(p);
}

void Driver::waitForCompletions()
{
    std::unique_lock lock(m_tally.mutex);
    while (m_tally.completed + m_tally.failed < m_outcome.accepted) {
        if (cancelled(m_cancel))
            return;
        m_tally.cv.wait_for(lock, kCancelSlice);
        lock.unlock();
        report(false);
        lock.lock();
    }
}

ReplayOutcome Driver::runReal(const std::function<void()> &drain)
{
    TimerSlack slack;
    const TimePoint start = SteadyClock::now();
    for (std::size_t i = 0; i < m_plan.size() && !cancelled(m_cancel); ++i) {
        const TimePoint when = start + m_plan[i].offset;
        for (TimePoint now = SteadyClock::now(); now < when && !cancelled(m_cancel);
             now = SteadyClock::now()) {
            report(false);
            std::this_thread::sleep_until(std::min(when, now + kCancelSlice));
        }
        if (cancelled(m_cancel))
            break;
        m_outcome.maxLateness = std::max(m_outcome.maxLateness, Duration(SteadyClock::now() - when));
        submit(i, when);
        report(false);
    }
    std::thread drainer;
    if (drain && !cancelled(m_cancel))
        drainer = std::thread(drain);
    waitForCompletions();
    if (drainer.joinable())
        drainer.join();
    return m_outcome;
}

ReplayOutcome Driver::runVirtual(Engine &engine, SessionRecorder &recorder, FakeClock &clock)
{
    const TimePoint start = clock.now();
    TimePoint nextSample = start + std::chrono::seconds(1);
    // Every batch dispatched so far has run: the clock may move.
    auto settle = [&] {
        std::unique_lock lock(m_tally.mutex);
        m_tally.cv.wait(lock, [&] {
            return m_tally.completed + m_tally.failed + engine.queueDepth() >= m_outcome.accepted;
        });
    };
    auto moveTo = [&](TimePoint t) {
        while (nextSample <= t) {
            clock.set(nextSample);
            recorder.sampleNow();
            nextSample += std::chrono::seconds(1);
        }
        if (t > clock.now())
            clock.set(t);
    };
    // Runs every scheduling event due up to `until`.
    auto runUntil = [&](std::optional<TimePoint> until) {
        for (;;) {
            const Engine::Step step = engine.runSchedulerOnce();
            if (step.dispatched || step.expired > 0) {
                settle();
                continue;
            }
            if (step.wakeAt && (!until || *step.wakeAt <= *until)) {
                moveTo(*step.wakeAt);
                continue;
            }
            return;
        }
    };
    for (std::size_t i = 0; i < m_plan.size() && !cancelled(m_cancel); ++i) {
        const TimePoint when = start + m_plan[i].offset;
        runUntil(when);
        moveTo(when);
        submit(i, when);
        report(false);
    }
    if (!cancelled(m_cancel))
        runUntil(std::nullopt);
    return m_outcome;
}

// The session's notes say how far a cancelled replay got.
void noteCancellation(TraceStore &store, const ReplayOptions &options, const ReplayOutcome &outcome)
{
    if (!outcome.cancelled)
        return;
    const std::string note = "cancelled after " + std::to_string(outcome.submitted) + " of " +
                             std::to_string(outcome.total) + " requests";
    (void)store.setSessionNotes(outcome.sessionId,
                                options.notes.empty() ? note : options.notes + "; " + note);
}

} // namespace

std::string_view replayClockName(ReplayClock clock)
{
    switch (clock) {
    case ReplayClock::Real: return "real";
    case ReplayClock::Virtual: return "virtual";
    case ReplayClock::Simulated: return "simulated";
    }
    return "real";
}

Replayer::Replayer(std::shared_ptr<TraceStore> store, std::shared_ptr<Backend> backend)
    : m_store(std::move(store)), m_backend(std::move(backend))
{
}

Result<ReplayOutcome> Replayer::run(const ReplayOptions &options, const ProgressFn &progress,
                                    const std::atomic<bool> *cancel)
{
    if (!m_store || !m_backend)
        return Status(StatusCode::InvalidArgument, "replay needs a trace store and a backend");
    if (options.clock == ReplayClock::Simulated)
        return Status(StatusCode::InvalidArgument,
                      "a simulated replay runs through SimulatedReplay, with a calibration");
    // The arrivals, and the config: the options', else the source session's last, else the defaults.
    auto planned = planReplay(*m_store, options, m_backend->info());
    if (!planned)
        return planned.status();
    const std::vector<PlannedRequest> &plan = planned->requests;
    const BatchingConfig &config = planned->config;

    // A fresh engine under the chosen config.
    FakeClock virtualClock;
    const bool isVirtual = options.clock == ReplayClock::Virtual;
    EngineOptions eo;
    eo.batching = config;
    eo.backend = m_backend;
    if (isVirtual) {
        eo.clock = &virtualClock;
        eo.manualScheduling = true;
    }
    auto engine = Engine::create(eo);
    if (!engine)
        return engine.status();

    SessionStart start = replaySessionStart(options, *planned);
    RecorderOptions ro = options.recorder;
    ro.sink.requestSource = "replay";
    if (isVirtual)
        ro.samplePeriod = Duration::zero();
    auto recorder = SessionRecorder::start(m_store, **engine, start, ro);
    if (!recorder)
        return recorder.status();

    const TimePoint wallStart = SteadyClock::now();
    Engine &e = **engine;
    Driver driver([&e](Request r, Completion done) { return e.submit(std::move(r), std::move(done)); },
                  e.model().vocabSize, options, plan, progress, cancel);
    ReplayOutcome outcome = isVirtual ? driver.runVirtual(e, **recorder, virtualClock)
                                      : driver.runReal([&e] { e.shutdown(ShutdownMode::Drain); });
    outcome.cancelled = cancelled(cancel);
    (*engine)->shutdown(outcome.cancelled ? ShutdownMode::Fail : ShutdownMode::Drain);
    (void)(*recorder)->finish();
    // Completions are all in once the engine has shut down.
    {
        ReplayProgress last;
        last.total = outcome.total;
        last.submitted = outcome.submitted;
        const Snapshot snap = (*engine)->snapshot();
        outcome.completed = snap.byStatus[std::size_t(StatusCode::Ok)];
        std::uint64_t all = 0;
        for (auto n : snap.byStatus)
            all += n;
        outcome.failed = std::size_t(all) - outcome.completed - outcome.rejected;
        last.finished = outcome.rejected + outcome.completed + outcome.failed;
        last.sourceSeconds = outcome.submitted ? plan[outcome.submitted - 1].sourceS : 0.0;
        if (progress)
            progress(last);
    }
    outcome.sessionId = (*recorder)->sessionId();
    outcome.clamped = planned->clamped;
    outcome.config = config;
    outcome.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    outcome.warning = (*recorder)->warning();
    noteCancellation(*m_store, options, outcome);
    return outcome;
}

Result<ReplayOutcome> Replayer::runRemote(const ReplayOptions &options, RemoteTarget &target,
                                          const ProgressFn &progress, const std::atomic<bool> *cancel)
{
    if (!m_store)
        return Status(StatusCode::InvalidArgument, "replay needs a trace store");
    if (options.clock != ReplayClock::Real)
        return Status(StatusCode::InvalidArgument,
                      "a remote replay runs on the real clock (--virtual simulates the "
                      "embedded engine; there is no remote server to simulate)");
    auto planned = planReplay(*m_store, options, target.model());
    if (!planned)
        return planned.status();
    const std::vector<PlannedRequest> &plan = planned->requests;

    SessionStart start = replaySessionStart(options, *planned);
    start.replay.erase("config"); // the remote server's settings are its own, not this config
    // The yardstick is the client's, though: the goodput SLO of the config
    // (given, or the source session's) judges the remote session's goodput.
    if (const GoodputConfig &slo = planned->config.goodput; slo.any())
        start.replay["goodput_slo"] = goodputSloJson(slo);
    start.model.clear(); // the target's model
    auto session = RemoteSession::start(m_store, target, start, options.recorder);
    if (!session)
        return session.status();

    const TimePoint wallStart = SteadyClock::now();
    Driver driver(
        [&target](Request r, Completion done) { return target.submit(std::move(r), std::move(done)); },
        target.model().vocabSize, options, plan, progress, cancel);
    ReplayOutcome outcome = driver.runReal();
    outcome.cancelled = cancelled(cancel);
    outcome.client = target.finish(outcome.cancelled);
    // Every completion has run: the tally is final.
    const auto [completed, failed] = driver.tally();
    outcome.completed = completed;
    outcome.failed = failed;
    (*session)->end(outcome.client);

    if (progress) {
        ReplayProgress last;
        last.total = outcome.total;
        last.submitted = outcome.submitted;
        last.finished = outcome.rejected + outcome.completed + outcome.failed;
        last.sourceSeconds = outcome.submitted ? plan[outcome.submitted - 1].sourceS : 0.0;
        progress(last);
    }
    outcome.sessionId = (*session)->sessionId();
    outcome.clamped = planned->clamped;
    outcome.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    outcome.warning = (*session)->warning();
    noteCancellation(*m_store, options, outcome);
    return outcome;
}

} // namespace bp
