#include "replay_driver.h"

#include "engine/workload/prefix_tokens.h"
#include "engine/workload/virtual_time.h"

#include <thread>

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace bp::replay_detail {

namespace {

constexpr Duration kCancelSlice = std::chrono::milliseconds(50);

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

} // namespace

bool cancelled(const std::atomic<bool> *cancel)
{
    return cancel && cancel->load(std::memory_order_relaxed);
}

Driver::Driver(SubmitFn submit, const ModelInfo &model, const ReplayOptions &options, const ReplayPlan &plan,
               const Replayer::ProgressFn &progress, const std::atomic<bool> *cancel)
    : m_submit(std::move(submit)), m_model(model), m_options(options), m_plan(plan), m_progress(progress),
      m_cancel(cancel), m_rng(options.seed)
{
    m_outcome.total = plan.requests.size();
}

std::pair<std::size_t, std::size_t> Driver::tally()
{
    std::lock_guard lock(m_mutex);
    return {m_completed, m_failed};
}

void Driver::begin(TimePoint start)
{
    std::lock_guard lock(m_mutex);
    m_arrivals.emplace(m_plan.requests, start, m_model.vocabSize);
}

std::optional<Driver::Due> Driver::nextDue()
{
    std::lock_guard lock(m_mutex);
    return m_arrivals->next();
}

std::vector<TokenId> Driver::promptFor(std::size_t i)
{
    const PlannedArrival &p = m_plan.requests[i];
    const int vocab = std::max(1, m_model.vocabSize);
    std::vector<TokenId> own = promptTokens(p.blocks, p.blockTokens, p.inputTokens, vocab, m_rng);
    std::lock_guard lock(m_mutex);
    return m_arrivals->prompt(i, std::move(own));
}

void Driver::completed(std::size_t i, bool ok, std::vector<TokenId> answer)
{
    {
        std::lock_guard lock(m_mutex);
        ++(ok ? m_completed : m_failed);
        m_arrivals->ended(i, m_now(), std::move(answer));
    }
    m_cv.notify_all();
}

void Driver::submit(std::size_t i, TimePoint arrival)
{
    const PlannedArrival &p = m_plan.requests[i];
    Request r;
    r.id = i + 1; // the position in the source: requests.request_id of the replay
    r.tokens = promptFor(i);
    r.maxNewTokens = p.maxNewTokens;
    if (p.followUp()) {
        // The length rule (engine/core/length_rule.h) on the grown prompt:
        // cut from the end, so the shared prefix stays.
        const ScaledLengths len =
            clampLengths(int(r.tokens.size()), p.maxNewTokens, replayLengthLimits(m_options, m_model));
        if (len.clamped) {
            r.tokens.resize(std::size_t(len.input));
            r.maxNewTokens = len.output;
            ++m_outcome.clamped;
        }
    }
    {
        std::lock_guard lock(m_mutex);
        m_arrivals->sent(i, r.tokens);
    }
    if (keepPrompts)
        sentPrompts[i] = r.tokens;
    r.arrival = arrival;
    r.conversation = p.conversation;
    r.turn = p.turn;
    ++m_outcome.submitted;
    m_sourceS = p.sourceS;
    const Status s = m_submit(std::move(r), [this, i](Response &&resp) {
        completed(i, resp.status.isOk(), std::move(resp.tokens));
    });
    if (s.isOk()) {
        ++m_outcome.accepted;
    } else {
        ++m_outcome.rejected;
        if (p.next >= 0) { // refused: the conversation goes on from the refusal
            {
                std::lock_guard lock(m_mutex);
                m_arrivals->ended(i, m_now(), {});
            }
            m_cv.notify_all();
        }
    }
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
    p.total = m_plan.requests.size();
    p.submitted = m_outcome.submitted;
    {
        std::lock_guard lock(m_mutex);
        p.finished = m_outcome.rejected + m_completed + m_failed;
    }
    p.sourceSeconds = m_sourceS;
    m_progress(p);
}

void Driver::waitForCompletions()
{
    std::unique_lock lock(m_mutex);
    while (m_completed + m_failed < m_outcome.accepted) {
        if (cancelled(m_cancel))
            return;
        m_cv.wait_for(lock, kCancelSlice);
        lock.unlock();
        report(false);
        lock.lock();
    }
}

ReplayOutcome Driver::runReal(const std::function<void()> &drain)
{
    TimerSlack slack;
    begin(SteadyClock::now());
    while (!allSent() && !cancelled(m_cancel)) {
        const std::optional<Due> due = nextDue();
        const TimePoint now = SteadyClock::now();
        if (!due || due->at > now) {
            // Sleep until it is due, or until a completion releases an earlier turn.
            const TimePoint until = due ? std::min(due->at, now + kCancelSlice) : now + kCancelSlice;
            report(false);
            std::unique_lock lock(m_mutex);
            if (!due && m_completed + m_failed >= m_outcome.accepted && !m_arrivals->releasedAt())
                break; // nothing can release the rest (cannot happen with a consistent plan)
            m_cv.wait_until(lock, until);
            continue;
        }
        {
            std::lock_guard lock(m_mutex);
            m_arrivals->take(*due);
        }
        m_outcome.maxLateness = std::max(m_outcome.maxLateness, Duration(now - due->at));
        submit(due->index, due->at);
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
    m_now = [&clock] { return clock.now(); };
    begin(clock.now());
    // A metric sample every virtual second on the way.
    VirtualTime time(
        clock.now(), std::chrono::seconds(1), [&clock](TimePoint t) { clock.set(t); },
        [&recorder] { recorder.sampleNow(); });
    auto moveTo = [&](TimePoint t) { time.moveTo(t); };
    // Every batch dispatched so far has run: the clock may move.
    auto settle = [&] {
        std::unique_lock lock(m_mutex);
        m_cv.wait(lock, [&] { return m_completed + m_failed + engine.queueDepth() >= m_outcome.accepted; });
    };
    // The earliest released follow-up: the engine may not run past it.
    auto releasedAt = [&]() -> std::optional<TimePoint> {
        std::lock_guard lock(m_mutex);
        return m_arrivals->releasedAt();
    };
    // Runs every scheduling event due up to `until` (and never past a follow-up a completion released).
    auto runUntil = [&](std::optional<TimePoint> until) {
        for (;;) {
            const Engine::Step step = engine.runSchedulerOnce();
            if (step.dispatched || step.expired > 0) {
                settle();
                continue;
            }
            std::optional<TimePoint> bound = until;
            if (const auto r = releasedAt(); r && (!bound || *r < *bound))
                bound = r;
            if (step.wakeAt && (!bound || *step.wakeAt <= *bound)) {
                moveTo(*step.wakeAt);
                continue;
            }
            return;
        }
    };
    while (!allSent() && !cancelled(m_cancel)) {
        const std::optional<Due> due = nextDue();
        if (!due) {
            // Only follow-ups are left: run the engine until a completion releases one.
            const std::size_t before = m_outcome.submitted;
            runUntil(std::nullopt);
            if (!releasedAt() && m_outcome.submitted == before)
                break; // nothing more can come (cannot happen with a consistent plan)
            continue;
        }
        runUntil(due->at);
        if (const std::optional<Due> now = nextDue(); now && now->at < due->at)
            continue; // a completion released an earlier turn
        moveTo(due->at);
        {
            std::lock_guard lock(m_mutex);
            m_arrivals->take(*due);
        }
        submit(due->index, std::max(due->at, clock.now()));
        report(false);
    }
    if (!cancelled(m_cancel))
        runUntil(std::nullopt);
    return m_outcome;
}

} // namespace bp::replay_detail
