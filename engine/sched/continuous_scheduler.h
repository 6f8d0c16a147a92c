// The iteration-level Scheduler (policy `continuous`, issue 14 item 2), after
// vLLM's and Orca's schedulers: the unit of work is one step over a running
// set of sequences (StepModel::step), not a batch of whole requests.
//  - A finished sequence leaves the running set after the step that produced
//    its last token; a waiting one joins at the next step.
//  - Every step spends at most max_num_batched_tokens tokens: one per
//    decoding sequence, and prompt tokens of prefilling ones. With chunked
//    prefill a prompt is fed in chunks of at most prefill_chunk tokens, so a
//    long prompt shares steps with running decodes; without it a prompt is
//    fed whole, in a step with room for all of it.
//  - decode_first: decodes take the budget before prefills (lower
//    time-per-token for the running); otherwise prefills first (lower
//    time-to-first-token for the waiting).
//  - kv_cache_tokens (0 = unlimited) bounds the tokens held in KV caches.
//    On a model with a KV pool (StepModel::kvPool(): a paged decoder) the
//    budget is the pool: kv_cache_tokens, or at 0 the pool's capacity, in
//    whole blocks; a sequence of n tokens is booked as ceil(n / block)
//    blocks, as the pool holds it, so "KV full" is the pool being full.
//    When the running sequences' next tokens do not fit, the most recently
//    joined sequence is preempted by recompute: its cache is released and it
//    goes back to the front of the queue with the tokens it generated; when
//    it runs again its prompt and those tokens are prefilled, so greedy
//    decoding produces exactly the same output.
//  - Order of joining: FCFS, or by priority then arrival.
//    A sequence preempted by a decision does not rejoin in that decision.
//  - kv_cache_tokens lowered live: a sequence (waiting or running) whose
//    prompt plus max_new_tokens no longer fit it is failed with OutOfRange
//    at the next decision, so that it cannot stall those behind it.
//  - A request whose `cancelled` flag is set is completed with Cancelled at
//    the next decision and its cache released.
//  - onToken is called for every generated token, in order, under the engine
//    lock (from finished()), before the completion.
//  - prefix_cache.enabled (on a model that cachesPrefixes()): a KV prefix
//    cache (prefix_cache.h). A joining sequence starts from the cached
//    whole blocks its context begins with (never its last token: it is fed
//    so the next token can be sampled) and prefills only the rest; every
//    whole block a sequence computes is cached. Cached blocks count inside
//    kv_cache_tokens once, however many sequences share them; unreferenced
//    ones are evicted LRU when the room is needed. A live change of the
//    block size (or turning caching off) drops the cache at the next
//    decision; sequences then running go on without caching.
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
#include <vector>

namespace bp {

class ContinuousScheduler : public Scheduler {
public:
    // `model` must outlive the scheduler; it is called (release()) under the
    // engine lock.
    // `ids`: the engine's unit ids (null: a fresh sequence from 1).
    ContinuousScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                        std::shared_ptr<UnitIds> ids = nullptr);
    ~ContinuousScheduler() override;

    Status admit(Pending &pending, TimePoint now) override;
    Poll poll(TimePoint now, bool draining, bool mayDispatch = true) override;
    bool finished(WorkUnit &unit, UnitRun &run, TimePoint now, UnitDone &done) override;
    void reconfigure(const BatchingConfig &config, std::uint64_t version) override;
    std::vector<Pending> takeAll() override;

    // Waiting and running sequences together (the engine drains until 0).
    std::size_t size() const override { return m_waiting.size() + m_running.size(); }
    // One queue: the waiting requests (iteration gauges have the rest).
    SchedulerGauges gauges(TimePoint now) const override;
    IterationGauges iterationGauges() const;

    std::size_t waiting() const { return m_waiting.size(); }
    std::size_t running() const { return m_running.size(); }
    // Tokens this scheduler counts in KV caches (its own books): the running
    // sequences' own tokens and the prefix cache's blocks, shared ones once.
    // Without prefix caching it equals the model's cachedTokens() between
    // steps.
    std::int64_t kvTokens() const { return m_kvTokens + (m_prefix ? m_prefix->tokens() : 0); }
    std::uint64_t preemptions() const { return m_preemptions; }
    // The prefix cache in force; nullptr when prefix caching is off (or the
    // model does not cache prefixes).
    const PrefixCache *prefixCache() const { return m_prefix.get(); }

private:
    struct Sequence;
    using SequencePtr = std::unique_ptr<Sequence>;

    Status check(const Request &request, TimePoint now) const;
    void enqueueWaiting(SequencePtr s);
    void preempt(std::size_t runningIndex);
    void release(Sequence &s);
    // Completes `s` (removed from its list by the caller) into `done`.
    void complete(SequencePtr s, Status status, TimePoint now, UnitDone &done);
    bool fitsKv(std::int64_t tokens) const;
    // The KV budget in tokens (0 = unlimited): kv_cache_tokens, capped by
    // the model's pool and rounded down to whole blocks.
    std::int64_t kvBudget() const;
    // What the budget is called in a message: kv_cache_tokens, or the pool.
    std::string budgetName() const;
    // `tokens` rounded up to whole pool blocks (the model's granule; 1 when
    // it has no pool).
    std::int64_t roundUp(std::int64_t tokens) const { return (tokens + m_granule - 1) / m_granule * m_granule; }
    // KV `s` takes on when `tokens` more of its context are fed.
    std::int64_t kvGrowth(const Sequence &s, std::int64_t tokens) const;
    // The model's pool, read at construction and at every reconfigure.
    void readPool();
    // OutOfRange when `s` can never fit the current KV budget (its prompt
    // plus max_new_tokens exceed kv_cache_tokens), else nullopt.
    std::optional<Status> neverFits(const Sequence &s) const;

    // Prefix caching (continuous_prefix.cpp).
    // Builds, rebuilds (block size changed) or drops the cache as the config
    // says; only between steps.
    void syncPrefixCache();
    // Evicts unreferenced blocks while the KV budget is exceeded.
    void evictOverflow();
    // With a pool: evicts unreferenced blocks until `tokens` more fit the
    // pool itself (a step is about to fill them; the books counted the
    // unreferenced blocks as room).
    void makeRoom(std::int64_t tokens);
    // The cached blocks `s` may start from (empty when caching is off).
    PrefixCache::Match lookupPrefix(const Sequence &s) const;
    // The blocks of `s` that `tokens` more tokens complete, for StepItem::publish.
    std::vector<KvBlock> blocksToPublish(const Sequence &s, std::int64_t tokens) const;
    // After a successful step: the blocks `s` published enter the cache.
    void adoptPublished(Sequence &s, const std::vector<KvBlock> &published);
    // Drops the references `s` holds to cached blocks.
    void releaseBlocks(Sequence &s);
    std::int64_t unreferencedTokens() const { return m_prefix ? m_prefix->unreferencedTokens() : 0; }

    ModelLimits m_limits;
    StepModel &m_model;
    std::uint64_t m_configVersion = 1;
    std::deque<SequencePtr> m_waiting;  // join order: front first
    std::vector<SequencePtr> m_running; // in the order they joined
    // Tokens the running sequences hold outside cached blocks, in whole pool
    // blocks (kvTokens() adds the cache's).
    std::int64_t m_kvTokens = 0;
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
