// The books of a paged KV cache (after vLLM's and nano-vllm's block manager):
// the cache is one allocation cut into fixed-size blocks of `blockTokens`
// token slots; a sequence holds a table of blocks; a block carries a
// reference count and goes back to the free list when it reaches zero.
// Prefix caching *is* block sharing: a block kept under a hash
// (StepItem::publish) is referenced by the kept entry and by every sequence
// that starts from it (StepItem::prefix) — nothing is copied.
//
// Torch-free: the tensors behind the blocks live in the model
// (engine/torch/kv_pool.h); this class only hands out block numbers.
//
// Block numbers 0 .. reserved-1 are never handed out: the model uses them as
// scratch (the padded rows of a CUDA-graph step write their keys there).
//
// Thread-safe: every member locks (steps over disjoint sequences may run
// concurrently; a kept block may be shared by sequences of both).
#pragma once

#include "engine/core/request.h"
#include "engine/core/result.h"
#include "engine/core/thread_annotations.h"

#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace bp {

class KvBlockPool {
public:
    // `blocks` usable blocks of `blockTokens` slots (> 0 each), after
    // `reserved` scratch blocks; block numbers run 0 .. reserved + blocks - 1.
    KvBlockPool(std::int64_t blocks, int blockTokens, int reserved = 1);

    int blockTokens() const { return m_blockTokens; }
    int reserved() const { return m_reserved; }
    std::int64_t totalBlocks() const { return m_total; } // usable ones
    std::int64_t freeBlocks() const;
    std::int64_t usedBlocks() const { return m_total - freeBlocks(); }
    // Blocks needed to hold `tokens` slots.
    std::int64_t blocksFor(std::int64_t tokens) const { return (tokens + m_blockTokens - 1) / m_blockTokens; }

    // `n` blocks, each with one reference, lowest free numbers first; nullopt
    // (and nothing taken) when fewer than `n` are free.
    std::optional<std::vector<std::int32_t>> allocate(std::int64_t n);
    // One more / one less reference on each block; a block at zero goes back
    // to the free list. Unref of a free or reserved block is ignored.
    void ref(std::span<const std::int32_t> blocks);
    void unref(std::span<const std::int32_t> blocks);
    int refs(std::int32_t block) const;

    // Prefix caching. A kept entry is a run of whole blocks under a hash
    // (the scheduler's block, prefix_cache.block_tokens tokens, a multiple of
    // blockTokens) and the token ids it holds, so that a 64-bit hash
    // collision is never taken for a match.
    //
    // Keeps `blocks` (one reference more each) under `hash`; false when the
    // hash is kept already (the kept blocks stay as they are).
    bool keep(std::uint64_t hash, std::span<const std::int32_t> blocks, std::span<const TokenId> tokens);
    // The blocks kept under `hash` when they hold exactly `tokens`, with one
    // reference more each for the caller; nullopt otherwise.
    std::optional<std::vector<std::int32_t>> share(std::uint64_t hash, std::span<const TokenId> tokens);
    // The blocks of the kept entries `hashes`, in order, one reference more
    // each for the caller; Internal naming the first one not kept (nothing is
    // referenced then).
    // With `tokens`, the token ids of those entries are appended to it.
    Result<std::vector<std::int32_t>> chain(std::span<const std::uint64_t> hashes,
                                            std::vector<TokenId> *tokens = nullptr);
    // Token slots covered by the kept entries `hashes` (0 for unknown ones).
    std::int64_t keptTokens(std::span<const std::uint64_t> hashes) const;
    // Forgets kept entries (their blocks lose the kept reference). Unknown
    // hashes are ignored.
    void drop(std::span<const std::uint64_t> hashes);
    std::size_t keptEntries() const;

private:
    void unrefLocked(std::int32_t block) REQUIRES(m_mutex);

    struct Kept {
        std::vector<std::int32_t> blocks;
        std::vector<TokenId> tokens;
    };
    const int m_blockTokens;
    const int m_reserved;
    const std::int64_t m_total;
    mutable Mutex m_mutex;
    std::vector<std::int32_t> m_refs GUARDED_BY(m_mutex);  // per block number
    std::vector<std::int32_t> m_free GUARDED_BY(m_mutex);  // a stack: the lowest number on top
    std::unordered_map<std::uint64_t, Kept> m_kept GUARDED_BY(m_mutex);
};

} // namespace bp
