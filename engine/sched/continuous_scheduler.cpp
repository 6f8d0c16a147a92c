// ContinuousScheduler (continuous_scheduler.h): BatchPilot's decision over
// the books: preempt for the next tokens, feed the running, join the
// waiting, in the order decode_first says.
#include "continuous_scheduler.h"

#include <algorithm>
#include <limits>

namespace bp {

struct ContinuousScheduler::Plan {
    StepWork &step;
    std::int64_t budget = 0;     // tokens left in this step
    std::int64_t kvRoom = 0;     // KV tokens free at the decision (unreferenced cached blocks are room)
    std::int64_t kvReserved = 0; // of kvRoom, what this step takes
    std::int64_t kvPinned = 0;   // of kvReserved: cached blocks joining sequences start from
};

ContinuousScheduler::ContinuousScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                                         std::shared_ptr<UnitIds> ids)
    : SequenceBooks(std::move(config), limits, model, std::move(ids),
                    Parts{.kvPool = true, .prefixCache = true, .priorityOrder = true})
{
}

Status ContinuousScheduler::checkModel(const Request &r) const
{
    const ContinuousConfig &c = m_config.continuous;
    const int len = int(r.tokens.size());
    if (!c.chunkedPrefill && len > c.maxNumBatchedTokens)
        return {StatusCode::OutOfRange, "input has " + std::to_string(len) +
                                            " tokens; without chunked prefill a prompt must fit "
                                            "max_num_batched_tokens (" +
                                            std::to_string(c.maxNumBatchedTokens) + ")"};
    return Status::ok();
}

void ContinuousScheduler::decide(TimePoint now, StepWork &step, std::vector<Failure> &failed)
{
    const int preempted = preemptForNextTokens();
    const std::int64_t kv = kvBudget();
    Plan plan{step};
    plan.budget = m_config.continuous.maxNumBatchedTokens;
    plan.kvRoom =
        kv > 0 ? kv - (kvTokens() - unreferencedTokens()) : std::numeric_limits<std::int64_t>::max() / 2;
    // A sequence preempted by this decision is at the front of the queue:
    // rejoining now would take the room its preemption made for the running
    // decodes and be preempted again at the next step. It
    // rejoins at a later decision; FCFS, nobody overtakes it.
    const bool mayJoin = preempted == 0;
    if (m_config.continuous.decodeFirst) {
        feedRunning(plan, true);
        feedRunning(plan, false);
        if (mayJoin)
            joinWaiting(plan, now);
    } else {
        feedRunning(plan, false);
        if (mayJoin)
            joinWaiting(plan, now);
        feedRunning(plan, true);
    }
    if (step.items.empty())
        failStuck(failed);
    else
        makeRoom(plan.kvReserved - plan.kvPinned);
}

std::optional<DecodeRun> ContinuousScheduler::beginDecodeRun(int maxSteps)
{
    const int room = std::min(maxSteps, decodeRunRoom());
    if (room < 1 || m_running.size() > std::size_t(m_config.continuous.maxNumBatchedTokens))
        return std::nullopt;
    // The KV each step's next tokens take, as preemptForNextTokens() counts
    // it before that step: a token per sequence (a model whose pool books
    // whole blocks has no runs: the simulator's cost model has no pool).
    const std::int64_t kv = kvBudget();
    if (kv > 0 && granule() != 1)
        return std::nullopt;
    const auto n = std::int64_t(m_running.size());
    const std::int64_t free = kv - (kvTokens() - unreferencedTokens());
    const int steps = kv <= 0 ? room : int(std::clamp<std::int64_t>(free / n, 0, room));
    if (steps < 1)
        return std::nullopt;
    DecodeRun run;
    run.steps = steps;
    run.sequences.reserve(m_running.size());
    for (const SequencePtr &s : m_running)
        run.sequences.push_back(s->id);
    m_workInFlight = true;
    return run;
}

int ContinuousScheduler::preemptForNextTokens()
{
    int preempted = 0;
    while (m_running.size() > 1) {
        std::int64_t next = 0; // KV the running sequences' next tokens take
        for (const SequencePtr &s : m_running)
            next += kvGrowth(*s, 1);
        if (fitsKv(next))
            break;
        preempt(m_running.size() - 1);
        ++preempted;
    }
    return preempted;
}

std::int64_t ContinuousScheduler::take(const Plan &plan, const Sequence &s) const
{
    const ContinuousConfig &c = m_config.continuous;
    const std::int64_t remaining = s.remaining();
    // The most tokens of `s` the KV room takes: whole blocks of it, after
    // the part of a block `s` already holds.
    const std::int64_t kvRoom = plan.kvRoom - plan.kvReserved;
    const std::int64_t kvFit = kvRoom < 0 ? 0 : roundUp(s.cached) + kvRoom / granule() * granule() - s.cached;
    const std::int64_t room = std::min(plan.budget, kvFit);
    if (s.decoding())
        return room >= 1 ? 1 : 0;
    if (c.chunkedPrefill)
        return std::max<std::int64_t>(0, std::min({remaining, std::int64_t(c.prefillChunk), room}));
    if (remaining <= room)
        return remaining;
    // Without chunked prefill a prompt is fed whole; one that can never fit
    // a step (a preempted sequence's prompt + generated tokens, or a budget
    // lowered live) is fed in budget-sized pieces instead of waiting forever.
    return remaining > c.maxNumBatchedTokens ? std::max<std::int64_t>(0, room) : 0;
}

void ContinuousScheduler::add(Plan &plan, Sequence &s, std::int64_t tokens)
{
    plan.kvReserved += kvGrowth(s, tokens);
    plan.budget -= tokens;
    feed(s, tokens, plan.step);
}

void ContinuousScheduler::feedRunning(Plan &plan, bool decodes)
{
    for (std::size_t i = 0; i < m_running.size() && plan.budget > 0; ++i) {
        Sequence &s = *m_running[i];
        if (s.planned > 0 || s.decoding() != decodes)
            continue; // in the step already, or not of this kind
        if (const std::int64_t n = take(plan, s); n > 0)
            add(plan, s, n);
    }
}

void ContinuousScheduler::joinWaiting(Plan &plan, TimePoint now)
{
    const ContinuousConfig &c = m_config.continuous;
    while (!m_waiting.empty() && m_running.size() < std::size_t(c.maxNumSeqs) && plan.budget > 0) {
        Sequence &s = *m_waiting.front();
        // The cached blocks it can start from: they skip prefill, and the
        // unreferenced ones among them stop being room.
        const PrefixCache::Match hit = matchPrefix(s);
        const std::int64_t hitTokens = matchTokens(hit);
        const std::int64_t pinned = pinnedTokens(hit);
        // Join only when the KV cache can hold its whole context and a first
        // new token beside what this step adds: joining with less would only
        // be preempted again at once.
        if (!fitsKv(plan.kvReserved + pinned + roundUp(std::int64_t(s.contextSize()) - hitTokens + 1)))
            break;
        s.cached = hitTokens;
        plan.kvReserved += pinned;
        const std::int64_t n = take(plan, s);
        if (n <= 0) {
            s.cached = 0;
            plan.kvReserved -= pinned;
            break; // FCFS: the front waits for room; nobody overtakes it
        }
        plan.kvPinned += pinned;
        startFromPrefix(s, hit, plan.step, now);
        add(plan, joinFront(now, plan.step), n);
    }
}

void ContinuousScheduler::failStuck(std::vector<Failure> &failed)
{
    // Only possible when kv_cache_tokens was lowered live below what the
    // oldest running sequence holds. Fail it rather than wait forever (it
    // cannot be preempted: it would never fit).
    if (!m_running.empty() && kvBudget() > 0 && !fitsKv(granule()))
        drop(0,
             Status(StatusCode::ResourceExhausted,
                    "kv_cache_tokens was lowered below what this sequence holds"),
             failed);
}

} // namespace bp
