// The books every iteration-level scheduler keeps (after vLLM V1's one
// scheduler.py): the waiting and running sequences, what each holds in the
// model's KV cache, admission, the step's outcome applied (tokens, TTFT,
// TPOT, inter-token gaps, onToken), completion, preemption by recompute,
// cancellation and deadlines. A policy only decides the next step
// (decide()): BatchPilot's own (ContinuousScheduler) and the models of
// vLLM, TGI and SGLang (server_models/) are each these books plus their
// decide(), so the engine and the simulator drive every one of them
// through the same seam (scheduler.h).
//
// Optional parts, chosen by the policy at construction (Parts):
//  - kvPool: the model's KV pool (StepModel::kvPool()) sets the granule KV
//    is booked in (whole pool blocks) and caps kvBudget();
//  - prefixCache: a KV prefix cache (prefix_cache.h) under
//    prefix_cache.enabled on a model that cachesPrefixes(). Its hooks: a
//    decision first syncs it with the config and evicts what overflows the
//    budget; a joining sequence asks matchPrefix() and startFromPrefix();
//    feed() publishes the whole blocks a step completes and finished()
//    adopts them; release() (completion, preemption) drops the sequence's
//    references; makeRoom() evicts for a pooled model before a step;
//  - priorityOrder: continuous.priority_order orders the waiting queue.
// Without a KV budget (kvBudget() 0, the server models: they keep their
// own KV limits in decide()) nothing is refused or failed for KV here.
// One step is in flight at a time. Not thread-safe (see Scheduler).
#pragma once

#include "engine/model/backend.h"
#include "prefix_cache.h"
#include "rate_estimator.h"
#include "scheduler.h"
#include "work_unit.h"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bp {

// The optional parts of SequenceBooks (see above).
struct BooksParts {
    bool kvPool = false;        // book KV in the model's pool blocks, capped by the pool
    bool prefixCache = false;   // keep a prefix cache when the config and the model allow
    bool priorityOrder = false; // honour continuous.priority_order in the waiting queue
};

class SequenceBooks : public Scheduler {
public:
    using Parts = BooksParts;
    // `model` must outlive the books; it is called (release(), dropBlocks())
    // under the engine lock. `ids`: the engine's unit ids (null: a fresh
    // sequence from 1).
    SequenceBooks(BatchingConfig config, ModelLimits limits, StepModel &model,
                  std::shared_ptr<UnitIds> ids = nullptr, Parts parts = {});
    ~SequenceBooks() override;

    Status admit(Pending &pending, TimePoint now) override;
    Poll poll(TimePoint now, bool draining, bool mayDispatch = true) override;
    bool finished(WorkUnit &unit, UnitRun &run, TimePoint now, UnitDone &done) override;
    // Nothing is dropped: a smaller max_num_seqs stops joins until the
    // running set is below it, a smaller KV budget preempts at the next step.
    void reconfigure(const BatchingConfig &config, std::uint64_t version) override;
    std::vector<Pending> takeAll() override;

    // Waiting and running sequences together (the engine drains until 0).
    std::size_t size() const override { return m_waiting.size() + m_running.size(); }
    // One queue: the waiting requests (iteration gauges have the rest).
    SchedulerGauges gauges(TimePoint now) const override;
    IterationGauges iterationGauges() const;

    std::size_t waiting() const { return m_waiting.size(); }
    std::size_t running() const { return m_running.size(); }
    // Tokens the books count in KV caches: the running sequences' own tokens
    // and the prefix cache's blocks, shared ones once. Without prefix
    // caching it equals the model's cachedTokens() between steps.
    std::int64_t kvTokens() const { return m_kvTokens + (m_prefix ? m_prefix->tokens() : 0); }
    std::uint64_t preemptions() const { return m_preemptions; }
    // The prefix cache in force; nullptr when prefix caching is off (or the
    // model does not cache prefixes, or the policy has no such part).
    const PrefixCache *prefixCache() const { return m_prefix.get(); }

protected:
    struct Sequence {
        Pending pending;
        std::uint64_t id = 0; // the model's live-sequence id; a new one on every join
        std::vector<TokenId> generated;
        std::int64_t cached = 0;  // tokens of the context in the model's KV cache
        std::int64_t planned = 0; // tokens it feeds in the step being decided
        bool joining = false;     // joined in the step being decided, not yet fed
        // Prefix caching: the cached blocks it references (its context's
        // leading whole blocks, in order), and whether its next whole blocks
        // are cached.
        std::vector<std::uint64_t> blocks;
        bool caching = false;
        int cachedPromptTokens = 0; // prompt tokens served from the cache at its first join
        bool joined = false;        // has run at least once
        TimePoint firstJoin{}, firstToken{}, lastToken{};
        std::vector<Duration> gaps; // before each generated token after the first

        int prompt() const { return int(pending.request.tokens.size()); }
        int maxNew() const { return pending.request.maxNewTokens; }
        std::size_t contextSize() const { return pending.request.tokens.size() + generated.size(); }
        TokenId contextAt(std::size_t i) const;
        // Context tokens not yet in the cache (a decode: 1).
        std::int64_t remaining() const { return std::int64_t(contextSize()) - cached; }
        bool decoding() const { return !generated.empty() && remaining() == 1; }
        bool isCancelled() const;
    };
    using SequencePtr = std::unique_ptr<Sequence>;

    // The policy's own admission check, after the books' (empty input,
    // max_new_tokens, model length, vocabulary) and before the deadline's:
    // OK or why it is refused.
    virtual Status checkModel(const Request &request) const = 0;
    // The policy's step at `now` (no step in flight, something to run): feed
    // sequences with feed(), join waiting ones with joinFront(), preempt
    // with preempt(). A running sequence that can never run again goes to
    // `failed` through drop(). Leaving `step` empty runs nothing now.
    virtual void decide(TimePoint now, StepWork &step, std::vector<Failure> &failed) = 0;
    // After a step's outcome is applied (the policy's counters).
    virtual void stepDone(const StepWork &) {}
    // The KV budget in tokens the books enforce (0 = none): admission,
    // never-fitting sequences, prefix-cache eviction, the gauge.
    virtual std::int64_t kvBudget() const { return 0; }

    // Moves the front waiting sequence to the end of the running set.
    Sequence &joinFront(TimePoint now, StepWork &step);
    // Adds `tokens` of `s`'s context to `step` (s.planned grows); a joining
    // sequence starts from its prefix blocks, and the whole blocks the
    // tokens complete are published.
    void feed(Sequence &s, std::int64_t tokens, StepWork &step);
    // Recompute: releases running[i]'s cache and puts it at the front of
    // the queue with what it generated.
    void preempt(std::size_t runningIndex);
    // Frees running[i] and fails it with `why`.
    void drop(std::size_t runningIndex, Status why, std::vector<Failure> &failed);

    // Whether a decode run may start: no unit in flight, nothing waiting,
    // no prefix cache, every running sequence decoding with nothing that
    // can change it between steps (a cancel flag, a token callback); how
    // many steps in a row none of them finishes (0: no run).
    int decodeRunRoom() const;
    // A decode run's steps applied (sequence_books_finished.cpp): as
    // finished() applies a step in which every running sequence decodes.
    // For a policy that offers decode runs (decode_runs.h).
    void applyDecodeRun(std::span<const TimePoint> ends);

    // KV, in the model's granule (1 without a pool part).
    bool fitsKv(std::int64_t tokens) const;
    std::int64_t roundUp(std::int64_t tokens) const
    {
        return (tokens + m_granule - 1) / m_granule * m_granule;
    }
    // KV `s` takes on when `tokens` more of its context are fed.
    std::int64_t kvGrowth(const Sequence &s, std::int64_t tokens) const
    {
        return roundUp(s.cached + tokens) - roundUp(s.cached);
    }
    // kv_cache_tokens capped by the pool (when the books have that part),
    // in whole blocks.
    std::int64_t cappedByPool(std::int64_t kvCacheTokens) const;
    // What the budget is called in a message: kv_cache_tokens, or the pool.
    std::string budgetName() const;
    std::int64_t granule() const { return m_granule; }
    std::int64_t poolTokens() const { return m_poolTokens; }

    // The prefix cache's hooks at join (sequence_books_prefix.cpp).
    // The cached blocks `s` may start from (empty when caching is off), and
    // what they are in tokens: all of them, and the unreferenced ones
    // (joining pins those: they stop being room).
    PrefixCache::Match matchPrefix(const Sequence &s) const;
    std::int64_t matchTokens(const PrefixCache::Match &hit) const;
    std::int64_t pinnedTokens(const PrefixCache::Match &hit) const;
    // `s` (about to join, s.cached set to the hit) references the hit's
    // blocks; the step counts the query and the hit.
    void startFromPrefix(Sequence &s, const PrefixCache::Match &hit, StepWork &step, TimePoint now);
    // With a pool: evicts unreferenced blocks until `tokens` more fit the
    // pool itself (a step is about to fill them; the books counted the
    // unreferenced blocks as room).
    void makeRoom(std::int64_t tokens);
    std::int64_t unreferencedTokens() const { return m_prefix ? m_prefix->unreferencedTokens() : 0; }

    std::deque<SequencePtr> m_waiting;  // join order: front first
    std::vector<SequencePtr> m_running; // in the order they joined
    // Tokens the running sequences hold outside cached blocks, in whole
    // granules (kvTokens() adds the cache's).
    std::int64_t m_kvTokens = 0;

private:
    Status check(const Request &request, TimePoint now) const;
    void enqueueWaiting(SequencePtr s);
    // OutOfRange when `s` can never fit the KV budget (its prompt plus
    // max_new_tokens exceed it), else nullopt.
    std::optional<Status> neverFits(const Sequence &s) const;
    // The sweeps of a decision: waiting ones that leave (cancelled, expired,
    // never fitting; returns the earliest deadline still ahead), running
    // ones that leave (cancelled, never fitting).
    std::optional<TimePoint> sweepWaiting(TimePoint now, Poll &result);
    void sweepRunning(Poll &result);
    // Stamps a decided step and hands it out.
    void dispatch(StepWork step, TimePoint now, Poll &result);
    void release(Sequence &s);
    // `s` generated `token` at `now`: its timing, then its onToken.
    void appendToken(Sequence &s, TokenId token, TimePoint now);
    // Completes `s` (removed from its list by the caller) into `done`.
    void complete(SequencePtr s, Status status, TimePoint now, UnitDone &done);
    void readPool();

    // The prefix cache's own (sequence_books_prefix.cpp).
    // Builds, rebuilds (block size changed) or drops the cache as the config
    // says; only between steps.
    void syncPrefixCache();
    // Evicts unreferenced blocks while the KV budget is exceeded.
    void evictOverflow();
    void evictUntil(std::int64_t tokens);
    // The blocks of `s` that `tokens` more tokens complete, for StepItem::publish.
    std::vector<KvBlock> blocksToPublish(const Sequence &s, std::int64_t tokens) const;
    // After a successful step: the blocks `s` published enter the cache.
    void adoptPublished(Sequence &s, const std::vector<KvBlock> &published);
    // Drops the references `s` holds to cached blocks; its own tokens leave
    // m_kvTokens.
    void releaseBlocks(Sequence &s);

    ModelLimits m_limits;
    StepModel &m_model;
    Parts m_parts;
    std::uint64_t m_configVersion = 1;
    std::int64_t m_granule = 1;    // the pool's block size (1: no pool)
    std::int64_t m_poolTokens = 0; // the pool's capacity (0: no pool)
    std::unique_ptr<PrefixCache> m_prefix;
    TimePoint m_now{}; // of the latest poll() or finished(): the cache's LRU stamps
    std::uint64_t m_nextSequenceId = 1;
    std::uint64_t m_nextSeq = 1;
    std::uint64_t m_preemptions = 0;
    int m_preemptedUnreported = 0; // preempted since the last step handed out
    RateEstimator m_rate;
};

} // namespace bp
