// Drives iteration-level books (engine/sched/sequence_books.h: policy
// `continuous` and the server models) like the engine's executor step, on a
// fake clock: poll, run the step on the model, hand the outcome back,
// complete. One loop for test_continuous, test_server_models and the
// prefix-cache tests (prefix_driver.h); HashModel is their greedy model.
#pragma once

#include "engine/core/clock.h"
#include "engine/model/backend.h"
#include "engine/sched/sequence_books.h"

#include <QtTest>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>

namespace bp::testing {

// Policy `continuous` with its step knobs.
inline BatchingConfig continuousConfig(int seqs, int budget, bool chunked = true, int chunk = 8, int kv = 0)
{
    BatchingConfig c;
    c.policy = PolicyKind::Continuous;
    c.continuous.maxNumSeqs = seqs;
    c.continuous.maxNumBatchedTokens = budget;
    c.continuous.chunkedPrefill = chunked;
    c.continuous.prefillChunk = chunk;
    c.continuous.kvCacheTokens = kv;
    return c;
}

// A request for the books: `tokens`, at most `maxNew` new ones, arriving at
// `now`; its completion lands in responses[id].
inline Pending pendingFor(std::uint64_t id, std::vector<TokenId> tokens, int maxNew, TimePoint now,
                          std::map<std::uint64_t, Response> &responses)
{
    Pending p;
    p.request.id = id;
    p.request.tokens = std::move(tokens);
    p.request.maxNewTokens = maxNew;
    p.request.arrival = now;
    p.done = [&responses, id](Response &&r) { responses[id] = std::move(r); };
    return p;
}

// One decision at the clock's now and its step on `model` (1 ms of the
// clock), as the executor takes it: what failed at the decision is
// completed with its status (after `failed` sees it), the step is handed
// back and what ended is completed. The step as it came back (runningAfter,
// ...), nullopt when the decision ran nothing; `ran`: how it ran.
inline std::optional<StepWork>
executorStep(SequenceBooks &books, StepModel &model, FakeClock &clock, UnitRun *ran = nullptr,
             const std::function<void(const Scheduler::Failure &)> &failed = {})
{
    Scheduler::Poll poll = books.poll(clock.now(), false);
    for (auto &f : poll.failed) {
        if (failed)
            failed(f);
        Response r;
        r.requestId = f.pending.request.id;
        r.status = f.status;
        f.pending.done(std::move(r));
    }
    if (!poll.step())
        return std::nullopt;
    UnitRun run;
    run.start = clock.now();
    run.guard.status = model.step(poll.step()->items, run.outcomes);
    clock.advance(std::chrono::milliseconds(1));
    run.end = clock.now();
    UnitDone done;
    books.finished(*poll.unit, run, clock.now(), done);
    for (std::size_t i = 0; i < done.done.size(); ++i)
        done.done[i].done(std::move(done.responses[i]));
    if (ran)
        *ran = std::move(run);
    return std::move(*poll.step());
}

// A deterministic greedy "model": the next token is a hash of the whole
// context, so any mistake in what the scheduler feeds (a lost, repeated or
// reordered token, a prefill that skips a recomputed token) changes every
// later token, and a recompute after preemption must give exactly the
// tokens of a run without it. Keeps each live sequence's context as its
// "KV cache".
class HashModel final : public StepModel {
public:
    static constexpr int kVocab = 97;
    Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) override
    {
        out.assign(items.size(), {});
        if (stepClock)
            stepClock->advance(std::chrono::milliseconds(1));
        for (std::size_t i = 0; i < items.size(); ++i) {
            std::vector<TokenId> &ctx = m_live[items[i].sequence];
            ctx.insert(ctx.end(), items[i].tokens.begin(), items[i].tokens.end());
            if (items[i].sample)
                out[i].next = next(ctx);
        }
        return Status::ok();
    }
    void release(std::uint64_t sequence) override { m_live.erase(sequence); }
    std::int64_t cachedTokens() const override
    {
        std::int64_t n = 0;
        for (const auto &[id, ctx] : m_live)
            n += std::int64_t(ctx.size());
        return n;
    }
    // One-at-a-time greedy generation, the reference.
    static std::vector<TokenId> generate(std::vector<TokenId> ctx, int n)
    {
        std::vector<TokenId> out;
        for (int i = 0; i < n; ++i) {
            out.push_back(next(ctx));
            ctx.push_back(out.back());
        }
        return out;
    }
    // When set, every step takes 1 ms of this clock (engine tests, where
    // nothing else advances time).
    FakeClock *stepClock = nullptr;

private:
    static TokenId next(const std::vector<TokenId> &ctx)
    {
        std::uint64_t h = 1469598103934665603ULL;
        for (TokenId t : ctx)
            h = (h ^ std::uint64_t(t)) * 1099511628211ULL;
        return TokenId(h % kVocab);
    }
    std::map<std::uint64_t, std::vector<TokenId>> m_live;
};

inline std::vector<TokenId> prompt(int length, int seed)
{
    std::vector<TokenId> t;
    for (int i = 0; i < length; ++i)
        t.push_back(TokenId((seed * 7 + i * 3) % HashModel::kVocab));
    return t;
}

// Books over a HashModel; a test's driver builds `scheduler` and says what
// it keeps of each step (recordStep). After every step the books' KV must
// equal the model's.
struct BooksDriver {
    FakeClock clock;
    HashModel model;
    std::unique_ptr<SequenceBooks> scheduler;
    std::map<std::uint64_t, Response> responses;
    std::map<std::uint64_t, std::vector<TokenEvent>> events;

    virtual ~BooksDriver() = default;
    Status submit(std::uint64_t id, std::vector<TokenId> tokens, int maxNew,
                  std::shared_ptr<std::atomic<bool>> cancelled = nullptr)
    {
        Pending p = pendingFor(id, std::move(tokens), maxNew, clock.now(), responses);
        p.request.cancelled = std::move(cancelled);
        p.request.onToken = [this](const TokenEvent &e) { tokenArrived(e); };
        return scheduler->admit(p, clock.now());
    }
    // One decision and its step; false when there was no step to run.
    bool stepOnce()
    {
        std::optional<StepWork> step = executorStep(*scheduler, model, clock);
        if (!step)
            return false;
        recordStep(*step);
        if (scheduler->kvTokens() != model.cachedTokens())
            qFatal("kv books %lld vs model %lld", (long long)scheduler->kvTokens(),
                   (long long)model.cachedTokens());
        return true;
    }
    void runAll(int maxSteps = 10000)
    {
        for (int i = 0; i < maxSteps && scheduler->size() > 0; ++i)
            if (!stepOnce())
                break;
    }

protected:
    virtual void recordStep(const StepWork &step) = 0;
    virtual void tokenArrived(const TokenEvent &e)
    {
        QVERIFY(!responses.count(e.requestId)); // every token before the completion
        events[e.requestId].push_back(e);
    }
};

} // namespace bp::testing
