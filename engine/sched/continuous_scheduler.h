// The iteration-level Scheduler (policy `continuous`), after
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
// The books (sequence_books.h) keep the sequences, KV, admission,
// completion and deadlines, with the pool and prefix-cache parts; this
// class is BatchPilot's policy on them: decide(). One step is in flight at a
// time. Not thread-safe (see Scheduler).
#pragma once

#include "decode_runs.h"
#include "sequence_books.h"

namespace bp {

class ContinuousScheduler final : public SequenceBooks, public DecodeRunSource {
public:
    // `model` must outlive the scheduler; it is called (release()) under the
    // engine lock.
    // `ids`: the engine's unit ids (null: a fresh sequence from 1).
    ContinuousScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                        std::shared_ptr<UnitIds> ids = nullptr);

    // Decode runs (decode_runs.h, the simulator's): the steps decide()
    // would take one after another while no request arrives — every
    // running sequence decoding, within max_num_batched_tokens, none
    // finishing, and the KV budget holding each step's next tokens (no
    // preemption).
    std::optional<DecodeRun> beginDecodeRun(int maxSteps) override;
    void endDecodeRun(std::span<const TimePoint> ends) override { applyDecodeRun(ends); }

private:
    // The step being decided: what is left of the token budget and of the
    // KV room.
    struct Plan;

    Status checkModel(const Request &request) const override;
    void decide(TimePoint now, StepWork &step, std::vector<Failure> &failed) override;
    // kv_cache_tokens, capped by the model's pool and rounded down to whole
    // blocks.
    std::int64_t kvBudget() const override { return cappedByPool(m_config.continuous.kvCacheTokens); }

    // The steps of decide().
    // Preempts the most recently joined until every running sequence has
    // room for one more token; how many it preempted.
    int preemptForNextTokens();
    // The running sequences that decode (or prefill) feed, in join order.
    void feedRunning(Plan &plan, bool decodes);
    // Waiting sequences join while the budget, max_num_seqs and KV allow.
    void joinWaiting(Plan &plan, TimePoint now);
    // Nothing could run: fails the oldest running sequence when a budget
    // lowered live leaves it no room.
    void failStuck(std::vector<Failure> &failed);
    // Tokens `s` can feed now: a decode 1, a prefill a chunk (or all of it).
    std::int64_t take(const Plan &plan, const Sequence &s) const;
    // Feeds `tokens` of `s` and charges them to the plan.
    void add(Plan &plan, Sequence &s, std::int64_t tokens);
};

} // namespace bp
