// A model of vLLM's V1 scheduler (vllm/v1/core/sched/scheduler.py) behind
// the scheduler seam, with vLLM's knobs (engine/core/server_model.h
// VllmKnobs). One step, as vLLM's schedule() decides it:
//  - a token budget of max_num_batched_tokens per step, shared by decodes
//    and prefills (no separate prefill chunk: a prompt takes what is left
//    of the budget, at most long_prefill_token_threshold when set);
//  - the running requests first, in the order they joined: each feeds its
//    remaining tokens (a decode 1, a partly prefilled prompt its next
//    chunk) within the budget;
//  - KV cache in blocks of block_size tokens (kv_cache_tokens / block_size
//    of them; 0 = unlimited): when a running request's new tokens need a
//    block and none is free, the most recently joined running request is
//    preempted by recompute (its blocks freed, back to the front of the
//    queue; it prefills its prompt and output again), until it fits, or
//    the request itself is the one preempted;
//  - then, only when nothing was preempted in this step, waiting requests
//    join in FCFS order while the budget lasts and fewer than max_num_seqs
//    run: without chunked prefill a prompt must fit the rest of the budget
//    (else the queue waits: FCFS); with it, it takes a chunk. A request
//    joins only when its chunk's blocks are free.
// Admission: without chunked prefill a prompt longer than
// max_num_batched_tokens is refused (vLLM refuses that config outright);
// a request that cannot fit the KV cache even alone is refused.
// Left out: prefix caching, priority scheduling, speculative decoding,
// async scheduling, LoRA and encoder budgets, the watermark.
#pragma once

#include "engine/sched/sequence_books.h"

namespace bp {

class VllmScheduler final : public SequenceBooks {
public:
    using SequenceBooks::SequenceBooks;

private:
    Status checkModel(const Request &request) const override;
    void decide(TimePoint now, StepWork &step, std::vector<Failure> &failed) override;
    std::int64_t blocks(std::int64_t tokens) const;
    std::int64_t usedBlocks() const; // Σ over the running of their cached + planned tokens' blocks
    bool fits(const Sequence &s, std::int64_t tokens) const;
};

} // namespace bp
