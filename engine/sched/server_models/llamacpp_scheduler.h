// A model of llama.cpp's llama-server slot loop (tools/server/
// server-context.cpp: process_single_task, get_available_slot,
// update_slots/pre_decode, process_token) behind the scheduler seam, with
// its knobs (engine/core/server_model.h LlamaCppKnobs). Each turn of the
// loop is one step:
//  - a request takes a free slot as soon as there is one (n_parallel
//    slots); the others wait in the deferred queue, first in first out;
//  - prompt caching (cache_prompt, on by default): a prompt's leading
//    tokens that a slot or the server's RAM prompt cache still holds are not
//    computed again. Modelled with the books' prefix cache (prefix_cache.h,
//    under prefix_cache.enabled, which the settings read from a llama-server
//    turn on): cached whole blocks of earlier contexts, shared by every
//    slot, never evicted (llama-server's --cache-ram holds 8 GiB by
//    default). A slot's own cache is per slot in the server; the model's is
//    shared, so a prefix another slot computed counts as a hit here;
//  - the batch: every generating slot's next token first, then prompt
//    tokens, slot by slot (here: in the order they joined), until the batch
//    holds n_batch tokens; a prompt
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
// (n_cache_reuse is kept for import/export), the choice of slot by prompt
// similarity (the shared cache stands for it), speculative decoding,
// multimodal chunks, context shift (off unless --context-shift).
#pragma once

#include "engine/sched/sequence_books.h"

namespace bp {

class LlamaCppScheduler final : public SequenceBooks {
public:
    LlamaCppScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                      std::shared_ptr<UnitIds> ids = nullptr);

    // The KV cache's tokens: n_ctx rounded up to a multiple of 256, as
    // llama_context does (build b1-0c1e570).
    static std::int64_t cacheTokens(const LlamaCppKnobs &k);
    // A slot's context: the cache's tokens, or without kv_unified its share
    // per slot rounded up to a multiple of 256 (-c 4096 -np 14 gives slots of
    // 512 tokens: the server's log says "rounding down to 7168").
    static std::int64_t slotContext(const LlamaCppKnobs &k);

private:
    Status checkModel(const Request &request) const override;
    void decide(TimePoint now, StepWork &step, std::vector<Failure> &failed) override;
    void joinWaiting(TimePoint now, StepWork &step);
};

} // namespace bp
