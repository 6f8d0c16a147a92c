// A model of llama.cpp's llama-server slot loop (tools/server/
// server-context.cpp: process_single_task, get_available_slot,
// update_slots/pre_decode, process_token) behind the scheduler seam, with
// its knobs (engine/core/server_model.h LlamaCppKnobs). Each turn of the
// loop is one step:
//  - a request takes a free slot as soon as there is one (n_parallel
//    slots); the others wait in the deferred queue, first in first out;
//  - the slot it takes: a free slot whose last prompt shares the longest
//    prefix with this one, if that prefix is more than 10% of the prompt
//    (slot_prompt_similarity); else the least recently used. The shared
//    prefix is kept (cache_prompt, on by default) and not computed again;
//    at least the prompt's last token is;
//  - the batch: every generating slot's next token first, then prompt
//    tokens, slot by slot, until the batch holds n_batch tokens; a prompt
//    that does not fit continues in the next turn. The server splits a
//    batch over n_batch into several llama_decode calls and each into
//    n_ubatch passes: the step's cost (the cost model's) is per token;
//  - a slot's context is n_ctx with a unified KV cache (kv_unified), else
//    n_ctx / n_parallel. A prompt of at least that many tokens is refused
//    ("exceeds the available context size"); a generation stops, truncated,
//    when prompt + generated + 1 reaches it (context shift is off by
//    default; with it the server would discard half the context and go on);
//  - with kv_unified the slots share n_ctx tokens of KV: prompt tokens that
//    do not fit wait for room (the server halves its batch and retries).
// Left out: --cache-reuse's KV-shifted chunk reuse beyond the common prefix
// (n_cache_reuse is kept for import/export), the RAM prompt cache of other
// slots' evicted prompts, speculative decoding, multimodal chunks,
// context shift (off unless --context-shift).
#pragma once

#include "engine/sched/sequence_books.h"

#include <vector>

namespace bp {

class LlamaCppScheduler final : public SequenceBooks {
public:
    LlamaCppScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                      std::shared_ptr<UnitIds> ids = nullptr);

    // A slot's context: n_ctx, or n_ctx / n_parallel without kv_unified.
    static std::int64_t slotContext(const LlamaCppKnobs &k);
    // Prompt tokens served from slots' kept prompts so far.
    std::int64_t reusedTokens() const { return m_reused; }

private:
    struct Slot {
        std::uint64_t sequence = 0;  // the running sequence's id; 0: free
        std::vector<TokenId> prompt; // the last prompt it held (prompt caching)
        std::uint64_t lastUsed = 0;  // turn it was last released
    };

    Status checkModel(const Request &request) const override;
    void decide(TimePoint now, StepWork &step, std::vector<Failure> &failed) override;
    void stepDone(const StepWork &step) override;
    // The slot a waiting request takes (a free one exists), and how many
    // of its prompt tokens the slot keeps.
    std::size_t pickSlot(const Sequence &s, std::int64_t &kept) const;
    void syncSlots(); // slots whose sequence left are free again
    void joinWaiting(TimePoint now, StepWork &step);

    std::vector<Slot> m_slots;
    std::uint64_t m_turn = 0;
    std::int64_t m_reused = 0;
};

} // namespace bp
