// A model of SGLang's scheduler (python/sglang/srt/managers/scheduler.py
// get_next_batch_to_run, schedule_policy.py PrefillAdder) behind the
// scheduler seam, with SGLang's knobs (engine/core/server_model.h
// SglangKnobs). Each decision:
//  - a prefill ("extend") batch when one can be formed, run alone; else
//    one decode step of every running request (prefill has priority);
//  - the prefill adder: a request being chunked continues first; then
//    waiting requests in schedule_policy order while fewer than
//    max_running_requests run, their prompts within max_prefill_tokens (the
//    first one always), and prompt + min(max_new_tokens, 4096) within the
//    KV pool left after what the running are still expected to generate —
//    (max_new_tokens − generated) × new_token_ratio each. A prompt longer
//    than what is left of chunked_prefill_size is cut to it and continues
//    in the next prefill batch (one chunked request at a time);
//  - new_token_ratio starts at min(0.7 × schedule_conservativeness, 1),
//    falls by (start − start × 0.14) / 600 per decode step to start × 0.14,
//    and goes back to its start when a decode runs out of KV (the request
//    with the fewest output tokens, then the longest prompt, is retracted
//    by recompute until the decode fits);
//  - schedule_policy lpm (longest prefix match) orders by a prefix cache's
//    hits; without a prefix cache in the model it is fcfs.
// Admission: prompt + max_new_tokens beyond max_total_tokens is refused.
// Left out: the radix (prefix) cache, mixed chunks (--enable-mixed-chunk),
// overlap scheduling, priorities, speculative decoding, page rounding.
#pragma once

#include "engine/sched/sequence_books.h"

namespace bp {

class SglangScheduler final : public SequenceBooks {
public:
    SglangScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                    std::shared_ptr<UnitIds> ids = nullptr);
    double newTokenRatio() const { return m_ratio; }

private:
    Status checkModel(const Request &request) const override;
    void decide(TimePoint now, StepWork &step, std::vector<Failure> &failed) override;
    void stepDone(const StepWork &step) override;
    bool prefill(TimePoint now, StepWork &step);
    double initRatio() const;

    double m_ratio = -1; // new_token_ratio (negative: not started)
    bool m_lastWasDecode = false;
};

} // namespace bp
