// Internal to the Replayer: paces a ReplayPlan into a target (the embedded
// engine or a remote server), on the real clock or, for the embedded
// engine, as a discrete-event simulation on a FakeClock.
//
// Open-loop requests go at their scheduled offsets. A follow-up turn of a
// conversation (PlannedArrival::followUp) is released `think` after its
// previous turn's completion (closed loop: the completion's time on the
// driver's clock, SteadyClock or the FakeClock), its prompt built by the
// conversation book (engine/workload/conversation_book.h). Prompt blocks
// (hash ids) become the same token ids in every replay (prefix_tokens.h).
#pragma once

#include "replay_plan.h"

#include "engine/exec/engine.h"
#include "engine/store/session_recorder.h"
#include "engine/workload/virtual_time.h"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <random>
#include <unordered_map>

namespace bp::replay_detail {

// Where the Driver's requests go: Engine::submit, or RemoteTarget::submit
// (replay_target.h). Same contract: non-OK = refused, else one completion.
using SubmitFn = std::function<Status(Request, Completion)>;

bool cancelled(const std::atomic<bool> *cancel);

class Driver {
public:
    Driver(SubmitFn submit, const ModelInfo &model, const ReplayOptions &options, const ReplayPlan &plan,
           const Replayer::ProgressFn &progress, const std::atomic<bool> *cancel);

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
    std::pair<std::size_t, std::size_t> tally();
    // The prompt sent for plan index i (tests): kept only while `keepPrompts`.
    bool keepPrompts = false;
    std::unordered_map<std::size_t, std::vector<TokenId>> sentPrompts;

private:
    class VirtualRun; // the driver of the one virtual-time loop (virtual_time.h)
    using Due = ArrivalPlan::Due;
    // The next request to send: the earliest of the next open-loop arrival
    // and the released follow-ups (ties: the lower plan index).
    std::optional<Due> nextDue();
    // Starts pacing the plan at `start`.
    void begin(TimePoint start);
    void submit(std::size_t index, TimePoint arrival);
    std::vector<TokenId> promptFor(std::size_t index);
    void completed(std::size_t index, bool ok, std::vector<TokenId> answer);
    void report(bool force);
    void waitForCompletions();
    bool allSent() const { return m_outcome.submitted >= m_plan.requests.size(); }

    const SubmitFn m_submit;
    const ModelInfo &m_model;
    const ReplayOptions &m_options;
    const ReplayPlan &m_plan;
    const Replayer::ProgressFn &m_progress;
    const std::atomic<bool> *m_cancel;
    std::mt19937_64 m_rng;
    std::function<TimePoint()> m_now = [] { return SteadyClock::now(); };

    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::size_t m_completed = 0, m_failed = 0; // guarded by m_mutex
    // The open-loop cursor, the released follow-ups and the turns' prompts
    // and answers (guarded by m_mutex; set by begin()).
    std::optional<ArrivalPlan> m_arrivals;

    ReplayOutcome m_outcome;
    double m_sourceS = 0;
    TimePoint m_lastReport{};
};

} // namespace bp::replay_detail
