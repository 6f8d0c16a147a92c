// The KV prefix cache of policy `continuous`, after vLLM's KV
// cache manager (automatic prefix caching) and SGLang's RadixAttention: the
// scheduler's books of which KV blocks the model holds, so that a request
// whose leading blocks were computed before starts from them instead of
// prefilling them again.
//
//  - A block is `blockTokens` tokens of a sequence's context (prompt, then
//    generated tokens), identified by a hash of its tokens chained with its
//    parent block's hash: equal hashes mean equal prefixes (the tokens are
//    kept and compared too, so a hash collision is a miss, never a wrong
//    answer).
//  - Blocks are shared by reference: every running sequence that starts from
//    a block, or computed it, holds one reference. A block nobody references
//    stays cached (on an LRU list) until room is needed; then the least
//    recently released goes first, and a sequence's blocks are released
//    tail first, so a chain loses its end before its start (vLLM frees a
//    request's blocks in reverse order for the same reason).
//  - Only whole blocks are cached or matched.
//
// No model here: the scheduler tells the model which blocks to keep
// (StepItem::publish), to start from (StepItem::prefix) and to drop
// (StepModel::dropBlocks). Not thread-safe (the scheduler's lock).
#pragma once

#include "engine/core/clock.h"
#include "engine/core/request.h"

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace bp {

class PrefixCache {
public:
    explicit PrefixCache(int blockTokens);

    int blockTokens() const { return m_blockTokens; }

    // The hash of a block of `tokens` whose parent block hashes to `parent`
    // (0 for a sequence's first block).
    static std::uint64_t blockHash(std::uint64_t parent, std::span<const TokenId> tokens);

    struct Match {
        std::vector<std::uint64_t> blocks; // the cached leading blocks, in order
        int unreferenced = 0;              // how many of them nobody references now
        std::int64_t tokens(int blockTokens) const { return std::int64_t(blocks.size()) * blockTokens; }
    };
    // The longest run of cached whole blocks at the start of `context`, at
    // most `maxBlocks`. Changes nothing.
    Match lookup(std::span<const TokenId> context, std::size_t maxBlocks) const;

    // Takes a reference to each of `blocks` (from lookup(), before anything
    // was evicted): they leave the LRU list.
    void acquire(const std::vector<std::uint64_t> &blocks, TimePoint now);
    // A block a sequence just computed: `tokens` (blockTokens of them) under
    // `hash`, child of `parent`. New: cached now, the caller holds its one
    // reference. Existing: cached already (another sequence computed the
    // same prefix); the caller now holds a reference to the cached one.
    // Collision: another block has this hash (not cached; no reference).
    enum class Inserted { New, Existing, Collision };
    Inserted insert(std::uint64_t hash, std::uint64_t parent, std::span<const TokenId> tokens, TimePoint now);
    // Drops one reference to each of `blocks`, a sequence's chain in order;
    // a block nobody references any more goes on the LRU list (tail first).
    void release(const std::vector<std::uint64_t> &blocks, TimePoint now);

    // Evicts the least recently released unreferenced block; its hash, or
    // nullopt when every block is referenced (or none is cached).
    std::optional<std::uint64_t> evictOne();
    // Forgets every block, referenced or not (the block size changed, or
    // caching was turned off); their hashes, for the model to drop.
    std::vector<std::uint64_t> clear();

    std::size_t blocks() const { return m_blocks.size(); }
    std::size_t unreferencedBlocks() const { return m_lru.size(); }
    std::int64_t tokens() const { return std::int64_t(m_blocks.size()) * m_blockTokens; }
    std::int64_t unreferencedTokens() const { return std::int64_t(m_lru.size()) * m_blockTokens; }
    // A block's references (0 when unreferenced or not cached) and when it
    // was last acquired, inserted or released (nullopt when not cached).
    int references(std::uint64_t hash) const;
    std::optional<TimePoint> lastUsed(std::uint64_t hash) const;
    std::uint64_t evictions() const { return m_evictions; }

private:
    struct Block {
        std::uint64_t parent = 0;
        std::vector<TokenId> tokens;
        int refs = 0;
        TimePoint lastUsed{};
        std::list<std::uint64_t>::iterator lru; // valid while refs == 0
    };
    int m_blockTokens;
    std::unordered_map<std::uint64_t, Block> m_blocks;
    std::list<std::uint64_t> m_lru; // unreferenced blocks, least recently released first
    std::uint64_t m_evictions = 0;
};

} // namespace bp
