// Internal to the Replayer: paces a ReplayPlan into a target (the embedded
// engine or a remote server), on the real clock or, for the embedded
// engine, as a discrete-event simulation on a FakeClock.
//
// Open-loop requests go at their scheduled offsets. A follow-up turn of a
// conversation (PlannedRequest::followUp) is released `think` after its
// previous turn's completion (closed loop: the completion's time on the
// driver's clock, SteadyClock or the FakeClock), its prompt the previous
// prompt + the previous answer (the engine's generated ids, else a
// stand-in of the planned answer length) + its new text. Prompt blocks
// (hash ids) become the same token ids in every replay (prefix_tokens.h).
#pragma once

#include "replay_plan.h"

#include "engine/exec/engine.h"
#include "engine/store/session_recorder.h"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <queue>
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
    struct Due {
        TimePoint at;
        std::size_t index;
        bool operator>(const Due &o) const { return at != o.at ? at > o.at : index > o.index; }
    };
    // The next request to send: the earliest of the next open-loop arrival
    // and the released follow-ups (ties: the lower plan index).
    std::optional<Due> nextDue(TimePoint start);
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
    std::size_t m_open = 0; // the next open-loop plan index to consider

    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::size_t m_completed = 0, m_failed = 0;                                // guarded by m_mutex
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> m_released; // guarded by m_mutex
    // A turn's prompt and answer until its follow-up is built (guarded by m_mutex).
    std::unordered_map<std::size_t, std::vector<TokenId>> m_prompts, m_answers;

    ReplayOutcome m_outcome;
    double m_sourceS = 0;
    TimePoint m_lastReport{};
};

} // namespace bp::replay_detail
