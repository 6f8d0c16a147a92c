// A model of TGI's router batching task (backends/v3/src/backend.rs
// batching_task, queue.rs next_batch) behind the scheduler seam, with TGI's
// knobs (engine/core/server_model.h TgiKnobs). Without prefill chunking:
//  - with no running batch, the queue forms one (FCFS): entries are taken
//    while their prompts stay within max_batch_prefill_tokens, prompts plus
//    max_new_tokens within max_batch_total_tokens, and at most
//    max_batch_size; the batch is prefilled alone (one step that also
//    produces each first token);
//  - with a running batch, before each decode the queue is asked for a new
//    batch within what the running one leaves of max_batch_total_tokens
//    (each running request holds its prompt plus max_new_tokens) and, unless
//    max_waiting_tokens decode steps have passed since the last prefill, of
//    at least floor(running × waiting_served_ratio) requests (else none);
//    a new batch is prefilled alone while the running batch waits, then
//    everyone decodes together;
//  - every decode step counts towards max_waiting_tokens; a prefill resets
//    the count;
//  - no preemption: the token budget reserves every request's whole output.
// Admission: at most max_concurrent_requests queued and running (TGI answers
// 429 past it); a prompt beyond max_batch_prefill_tokens or prompt plus
// max_new_tokens beyond max_batch_total_tokens is refused.
// Left out: chunked prefill (TGI 3 with flashinfer/flashdecoding: the
// prefill joins the decodes), speculation, padding of non-paged models,
// block rounding of the budgets.
#pragma once

#include "engine/sched/sequence_books.h"

namespace bp {

class TgiScheduler final : public SequenceBooks {
public:
    using SequenceBooks::SequenceBooks;
    int waitingTokens() const { return m_waitingTokens; }

private:
    Status checkModel(const Request &request) const override;
    void decide(TimePoint now, StepWork &step, std::vector<Failure> &failed) override;
    void stepDone(const StepWork &step) override;
    // How many of the waiting form the next batch (0: none), queue.rs next_batch.
    std::size_t nextBatch(std::optional<std::size_t> minSize, std::optional<std::size_t> maxSize,
                          std::int64_t tokenBudget) const;

    int m_waitingTokens = 0;   // decode steps since the last prefill
    bool m_decodeNext = false; // a concatenating prefill ran: everyone decodes next
    bool m_lastWasPrefill = false;
};

} // namespace bp
