// Replay: a recorded session or an imported trace re-driven into a fresh
// engine with its arrival gaps and lengths, under the config the caller
// chooses, recorded as a new session linked to its source.
//
//  - Real clock: arrivals are paced at their (scaled) gaps on the wall
//    clock and the backend really computes. Each request's arrival is its
//    *scheduled* time, so a late replayer never hides latency (no
//    coordinated omission); ReplayOutcome::maxLateness says how late the
//    submissions were.
//  - Virtual clock: a FakeClock and manual scheduling turn the replay into
//    a discrete-event simulation: no waiting, an hour of trace in seconds,
//    exactly reproducible. The batcher and the policy see the trace's exact
//    arrival times; compute takes zero virtual time (the clock does not move
//    while a batch runs), so latencies are pure queueing and batching delay.
//
// Threading: run() blocks the calling thread until the replay is over; the
// progress callback runs on that thread (throttled to progressInterval);
// `cancel` may be set from any thread (or a signal handler) and is honoured
// within ~50 ms: nothing more is submitted, queued requests fail with
// shutting_down, the session is ended and marked as cancelled.
#pragma once

#include "engine/store/session_recorder.h"
#include "engine/store/trace_store.h"
#include "replay_target.h"

#include "engine/model/backend.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

namespace bp {

struct ReplaySource {
    enum class Kind { Session, Trace };
    Kind kind = Kind::Session;
    std::int64_t id = 0;
};

// Simulated: no engine and no model; the simulator (engine/sim/) charges
// each batch a calibrated cost on the virtual clock. Replayer::run refuses
// it (it needs a calibration: bp::SimulatedReplay).
enum class ReplayClock { Real, Virtual, Simulated };

struct ReplayOptions {
    ReplaySource source;
    // nullopt: a session's last recorded config; for a trace, the defaults.
    std::optional<BatchingConfig> config;
    double speed = 1;       // 2 = gaps halved (twice the arrival rate)
    double lengthScale = 1; // input and output tokens multiplied (each at least 1: the length rule)
    std::size_t limit = 0;  // replay only the first N arrivals (0 = all)
    // Leave out the first N arrivals (`limit` then counts from there): a
    // window of the source (tune's verification, engine/sim/tune/verify_window.h).
    // With skip > 0 the offsets count from the first arrival sent.
    std::size_t skip = 0;
    ReplayClock clock = ReplayClock::Real;
    // Requests longer than the model accepts (prompt + output) are clamped
    // to it by the length rule (engine/core/length_rule.h; counted in
    // ReplayOutcome::clamped); false: they are submitted as they are and
    // rejected with out_of_range, as live traffic would be. Outputs that
    // scale below one token are raised to 1 either way (::raised).
    bool clampToModel = true;
    std::string notes;
    // The new session's sink; its requestSource is set to "replay". The
    // sampler period applies to the real clock; virtual replays take a
    // sample at every virtual second.
    RecorderOptions recorder;
    Duration progressInterval = std::chrono::milliseconds(200);
    std::uint64_t seed = 1; // token ids (their values do not matter to batching)
};

struct ReplayProgress {
    std::size_t total = 0;     // requests this replay sends
    std::size_t submitted = 0; // handed to the engine (accepted or rejected)
    std::size_t finished = 0;  // rejected at submit, or completed with any status
    double sourceSeconds = 0;  // how far into the source's timeline (unscaled)
    double fraction() const { return total ? double(finished) / double(total) : 1.0; }
};

struct ReplayOutcome {
    std::int64_t sessionId = 0;
    std::size_t total = 0;
    std::size_t submitted = 0;
    std::size_t accepted = 0;
    std::size_t rejected = 0;  // refused at submit
    std::size_t completed = 0; // ok
    std::size_t failed = 0;    // accepted, then not ok
    std::size_t clamped = 0;   // requests cut to the model's length (the plan's and follow-up turns')
    std::size_t raised = 0;    // outputs raised to one token
    bool cancelled = false;
    double wallSeconds = 0;
    Duration maxLateness{}; // real clock only
    BatchingConfig config;  // what the replay ran under (embedded engine only)
    std::string warning;    // the sink's, when logging stopped
    nlohmann::json client;  // remote replays: RemoteTarget::finish()'s figures; null otherwise
};

class Replayer {
public:
    using ProgressFn = std::function<void(const ReplayProgress &)>;

    // The backend is shared with the caller and may be shared with a live
    // engine (backends are thread-safe). A replayer for runRemote() only
    // needs no backend.
    Replayer(std::shared_ptr<TraceStore> store, std::shared_ptr<Backend> backend = nullptr);

    // NotFound for an unknown source, InvalidArgument for bad options or an
    // empty source; other failures come from the store or the engine.
    Result<ReplayOutcome> run(const ReplayOptions &options, const ProgressFn &progress = {},
                              const std::atomic<bool> *cancel = nullptr);

    // The same replay sent to a remote server instead of an engine
    // (replay_target.h): arrivals paced on the real clock at their
    // scheduled times (open loop; a request waiting for a free connection
    // keeps its scheduled arrival), inputs generated for target.model(),
    // recorded as a session of kind "remote" with the target's URL, its
    // requests (source "remote", batch_id 0: the client cannot see the
    // server's batches), a client-side metric sample every
    // options.recorder.samplePeriod and the target's scraped series.
    // options.config and the virtual clock do not apply (InvalidArgument
    // for ReplayClock::Virtual: a simulation has no server to ask).
    Result<ReplayOutcome> runRemote(const ReplayOptions &options, RemoteTarget &target,
                                    const ProgressFn &progress = {},
                                    const std::atomic<bool> *cancel = nullptr);

private:
    std::shared_ptr<TraceStore> m_store;
    std::shared_ptr<Backend> m_backend;
};

std::string_view replayClockName(ReplayClock clock);

} // namespace bp
