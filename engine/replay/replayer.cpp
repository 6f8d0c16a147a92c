#include "replayer.h"
#include "replay_plan.h"

#include "engine/store/session_summary.h"
#include "remote_session.h"

#include "engine/config/config_json.h"

#include "replay_driver.h"

namespace bp {

namespace {

using replay_detail::cancelled;
using replay_detail::Driver;

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
    const std::vector<PlannedArrival> &plan = planned->requests;
    const BatchingConfig &config = planned->config;
    const ModelInfo model = m_backend->info();

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
    Driver driver([&e](Request r, Completion done) { return e.submit(std::move(r), std::move(done)); }, model,
                  options, *planned, progress, cancel);
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
    outcome.clamped += planned->lengths.clamped;
    outcome.raised += planned->lengths.raised;
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
    const std::vector<PlannedArrival> &plan = planned->requests;

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
        target.model(), options, *planned, progress, cancel);
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
    outcome.clamped += planned->lengths.clamped;
    outcome.raised += planned->lengths.raised;
    outcome.wallSeconds = toSeconds(SteadyClock::now() - wallStart);
    outcome.warning = (*session)->warning();
    noteCancellation(*m_store, options, outcome);
    return outcome;
}

} // namespace bp
