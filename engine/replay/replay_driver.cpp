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

// The virtual-clock replay as a driver of the one virtual-time loop
// (virtual_time.h): the engine decides (Engine::runSchedulerOnce) after
// every arrival and at its wake-ups, which go before an arrival at the same
// time; a unit it dispatches runs at once on this thread, in no virtual time.
class Driver::VirtualRun final : public VirtualDriver {
public:
    VirtualRun(Driver &driver, Engine &engine, FakeClock &clock)
        : m_d(driver), m_engine(engine), m_clock(clock)
    {
    }

    std::optional<TimePoint> earlyEvent() override
    {
        if (cancelled(m_d.m_cancel))
            return std::nullopt; // the replayer shuts the engine down
        return m_news ? std::optional(m_clock.now()) : m_wakeAt;
    }
    void runEarly() override {}
    void arrive(std::size_t index) override
    {
        m_d.submit(index, m_clock.now());
        m_d.report(false);
        m_news = true;
    }
    void settle() override
    {
        if (!m_news && !(m_wakeAt && *m_wakeAt <= m_clock.now()))
            return;
        for (;;) {
            const Engine::Step step = m_engine.runSchedulerOnce();
            if (step.dispatched || step.expired > 0) {
                // Every batch dispatched so far has run: the clock may move.
                std::unique_lock lock(m_d.m_mutex);
                m_d.m_cv.wait(lock, [&] {
                    return m_d.m_completed + m_d.m_failed + m_engine.queueDepth() >= m_d.m_outcome.accepted;
                });
                continue;
            }
            m_wakeAt = step.wakeAt;
            m_news = false;
            return;
        }
    }
    bool idle() override { return false; }

private:
    Driver &m_d;
    Engine &m_engine;
    FakeClock &m_clock;
    bool m_news = true;                // something arrived since the last decision
    std::optional<TimePoint> m_wakeAt; // the engine's next decision
};

ReplayOutcome Driver::runVirtual(Engine &engine, SessionRecorder &recorder, FakeClock &clock)
{
    m_now = [&clock] { return clock.now(); };
    begin(clock.now());
    // A metric sample every virtual second on the way.
    VirtualTime time(
        clock.now(), std::chrono::seconds(1), [&clock](TimePoint t) { clock.set(t); },
        [&recorder] { recorder.sampleNow(); });
    VirtualRun run(*this, engine, clock);
    // Completions touch the plan from this thread only (a unit runs here).
    runVirtualLoop(*m_arrivals, time, run, m_cancel);
    return m_outcome;
}

} // namespace bp::replay_detail
