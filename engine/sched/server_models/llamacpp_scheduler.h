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
//    that does not fit continues in the next turn;
//  - its forward passes (StepItem::passes; the cost model charges each as
//    an iteration): llama_decode splits the batch into ubatches
//    (src/llama-kv-cache.cpp init_batch). With one KV cache (kv_unified, or
//    one slot) split_simple cuts it every n_ubatch tokens. With a cache per
//    slot split_equal(sequential) makes each ubatch of slots with
//    consecutive ids in the batch's order (decodes by slot, then prompts by
//    slot), the same number of tokens from each: so decodes of slots 0 and
//    2 run as two passes, and a prompt beside running decodes puts one
//    token in their pass and the rest in passes of its own (the turn is
//    about a decode pass plus a prefill: the gap every running sequence
//    sees). A slot is taken as llama-server's get_available_slot takes one
//    for prompts that share nothing: the least recently released (ties:
//    the highest id); each pass attends to its largest slot's KV view
//    padded to 256 cells (get_n_kv): the tokens of a pass read that many
//    cells of KV whatever their own context;
//  - a slot's context is n_ctx with a unified KV cache (kv_unified), else
//    n_ctx / n_parallel. A prompt of at least that many tokens is refused
//    ("exceeds the available context size"); a generation stops, truncated,
//    when prompt + generated + 1 reaches it (context shift is off by
//    default; with it the server would discard half the context and go on);
//  - with kv_unified the slots share n_ctx tokens of KV: prompt tokens that
//    do not fit wait for room (the server halves its batch and retries).
//  - when a task starts, the loop saves the KV of every idle slot whose
//    content its RAM prompt cache does not hold yet (the slot it takes, in
//    get_available_slot, and the others, cache_idle_slots: both on by
//    default), on the loop's thread: the turn that starts a task copies
//    the cells of the slots that finished since the last start
//    (StepItem::copiedCells, priced by the remote fit's s8 per cell), and
//    the running decodes wait for it.
// Left out: --cache-reuse's KV-shifted chunk reuse beyond the common prefix
// (n_cache_reuse is kept for import/export), the choice of slot by prompt
// similarity (the shared cache stands for it), loading a cached prompt back
// into a slot (prompts that share a prefix), --no-cache-idle-slots and
// --cache-ram 0 (the save is modelled as on), speculative decoding,
// multimodal chunks and context shift (off unless --context-shift).
#pragma once

#include "engine/sched/sequence_books.h"

#include <cstdint>
#include <vector>

namespace bp {

class LlamaCppScheduler final : public SequenceBooks {
public:
    // llama_kv_cache::get_n_kv pads a pass's KV view to this many cells, so
    // a decode at context 40 reads as much KV as one at 250.
    static constexpr std::int64_t kKvPad = 256;
    LlamaCppScheduler(BatchingConfig config, ModelLimits limits, StepModel &model,
                      std::shared_ptr<UnitIds> ids = nullptr);

    // The KV cache's tokens: n_ctx rounded up to a multiple of 256, as
    // llama_context does (build b1-0c1e570).
    static std::int64_t cacheTokens(const LlamaCppKnobs &k);
    // A slot's context: the cache's tokens, or without kv_unified its share
    // per slot rounded up to a multiple of 256 (-c 4096 -np 14 gives slots of
    // 512 tokens: the server's log says "rounding down to 7168").
    static std::int64_t slotContext(const LlamaCppKnobs &k);

    // What one item of a turn's batch is, for the pass split: its slot and
    // how many tokens it feeds, in the batch's order.
    struct BatchEntry {
        int slot = 0;
        std::int64_t tokens = 0;
    };
    // The ubatches llama_decode makes of `batch` (n_ubatch tokens at most
    // each), as (pass, tokens) pieces per entry, in `batch`'s order.
    // `perSlotCache`: split_equal(sequential), else split_simple.
    static std::vector<std::vector<StepItem::PassPiece>> passes(const std::vector<BatchEntry> &batch,
                                                                int nUbatch, bool perSlotCache);

private:
    Status checkModel(const Request &request) const override;
    void decide(TimePoint now, StepWork &step, std::vector<Failure> &failed) override;
    void joinWaiting(TimePoint now, StepWork &step);
    // Frees the slots of sequences no longer running (released in slot
    // order), then gives each running sequence without one the least
    // recently released free slot. Returns the KV cells the server saves
    // into its prompt cache as those tasks start: the unsaved content of
    // the slots taken and, when a task started, of every idle slot.
    std::int64_t bookSlots();
    // The KV cells each pass attends to (PassPiece::kvCells): the largest
    // KV view of its slots (one cache: all of it in use), padded to kKvPad.
    void attendTo(const StepWork &step, const std::vector<std::size_t> &order,
                  std::vector<std::vector<StepItem::PassPiece>> &pieces, bool perSlotCache) const;
    int slotOf(std::uint64_t sequence) const;

    std::vector<std::uint64_t> m_slotOwner;   // live-sequence id per slot, 0 = free
    std::vector<std::uint64_t> m_slotRelease; // when each slot was last released (a count; 0 = never)
    std::uint64_t m_releases = 0;
    std::vector<std::int64_t> m_slotCells; // KV cells each slot holds (its last sequence's context)
    std::vector<bool> m_slotUnsaved;       // released since its content was saved to the prompt cache
};

} // namespace bp
