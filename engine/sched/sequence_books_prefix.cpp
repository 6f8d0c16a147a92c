// SequenceBooks' optional prefix cache (sequence_books.h, prefix_cache.h):
// the cache's lifetime under live config changes, lookups at join, the
// blocks a step publishes, references and eviction.
#include "sequence_books.h"

namespace bp {

void SequenceBooks::syncPrefixCache()
{
    const PrefixCacheConfig &p = m_config.prefixCache;
    // On a pooled model a cached block is a whole number of pool blocks.
    const int want =
        m_parts.prefixCache && p.enabled && m_model.cachesPrefixes() ? int(roundUp(p.blockTokens)) : 0;
    const int have = m_prefix ? m_prefix->blockTokens() : 0;
    if (want == have)
        return;
    if (m_prefix) {
        // Dropped: every sequence keeps what its model cache holds, now as
        // its own tokens, and stops caching (its blocks were hashed at the
        // old size).
        m_model.dropBlocks(m_prefix->clear());
        m_prefix.reset();
        m_kvTokens = 0;
        for (SequencePtr &s : m_running) {
            s->blocks.clear();
            s->caching = false;
            m_kvTokens += roundUp(s->cached);
        }
    }
    if (want > 0)
        m_prefix = std::make_unique<PrefixCache>(want);
}

void SequenceBooks::evictUntil(std::int64_t tokens)
{
    const std::int64_t kv = kvBudget();
    if (!m_prefix || kv <= 0)
        return;
    std::vector<std::uint64_t> evicted;
    while (kvTokens() + tokens > kv)
        if (const auto h = m_prefix->evictOne())
            evicted.push_back(*h);
        else
            break;
    if (!evicted.empty())
        m_model.dropBlocks(evicted);
}

void SequenceBooks::makeRoom(std::int64_t tokens)
{
    if (m_poolTokens > 0)
        evictUntil(tokens);
}

void SequenceBooks::evictOverflow()
{
    evictUntil(0);
}

PrefixCache::Match SequenceBooks::matchPrefix(const Sequence &s) const
{
    if (!m_prefix)
        return {};
    // Never the last token: it is fed so that the next one can be sampled.
    const std::size_t B = std::size_t(m_prefix->blockTokens());
    const std::size_t maxBlocks = (s.contextSize() - 1) / B;
    if (maxBlocks == 0)
        return {};
    std::vector<TokenId> context(maxBlocks * B);
    for (std::size_t i = 0; i < context.size(); ++i)
        context[i] = s.contextAt(i);
    return m_prefix->lookup(context, maxBlocks);
}

std::int64_t SequenceBooks::matchTokens(const PrefixCache::Match &hit) const
{
    return m_prefix ? hit.tokens(m_prefix->blockTokens()) : 0;
}

std::int64_t SequenceBooks::pinnedTokens(const PrefixCache::Match &hit) const
{
    return m_prefix ? std::int64_t(hit.unreferenced) * m_prefix->blockTokens() : 0;
}

void SequenceBooks::startFromPrefix(Sequence &s, const PrefixCache::Match &hit, StepWork &step, TimePoint now)
{
    if (!m_prefix)
        return;
    m_prefix->acquire(hit.blocks, now);
    s.blocks = hit.blocks;
    s.caching = true;
    step.prefixQueryTokens += std::int64_t(s.contextSize());
    step.prefixHitTokens += matchTokens(hit);
    if (!s.joined)
        s.cachedPromptTokens = int(matchTokens(hit));
}

std::vector<KvBlock> SequenceBooks::blocksToPublish(const Sequence &s, std::int64_t tokens) const
{
    std::vector<KvBlock> out;
    if (!m_prefix || !s.caching)
        return out;
    const std::int64_t B = m_prefix->blockTokens();
    std::uint64_t parent = s.blocks.empty() ? 0 : s.blocks.back();
    std::vector<TokenId> block(std::size_t(B), 0);
    for (auto b = std::int64_t(s.blocks.size()); (b + 1) * B <= s.cached + tokens; ++b) {
        for (std::int64_t k = 0; k < B; ++k)
            block[std::size_t(k)] = s.contextAt(std::size_t(b * B + k));
        const std::uint64_t h = PrefixCache::blockHash(parent, block);
        out.push_back({h, b * B, B});
        parent = h;
    }
    return out;
}

void SequenceBooks::adoptPublished(Sequence &s, const std::vector<KvBlock> &published)
{
    if (!m_prefix || !s.caching)
        return;
    std::vector<TokenId> block;
    for (const KvBlock &kb : published) {
        block.resize(std::size_t(kb.tokens));
        for (std::int64_t k = 0; k < kb.tokens; ++k)
            block[std::size_t(k)] = s.contextAt(std::size_t(kb.start + k));
        const std::uint64_t parent = s.blocks.empty() ? 0 : s.blocks.back();
        if (m_prefix->insert(kb.hash, parent, block, m_now) == PrefixCache::Inserted::Collision) {
            s.caching = false; // a 64-bit collision: this sequence's blocks stay its own
            return;
        }
        // New: its tokens move from the sequence's own to the cache's.
        // Existing: shared with the cached copy, so counted once.
        s.blocks.push_back(kb.hash);
        m_kvTokens -= kb.tokens;
    }
}

void SequenceBooks::releaseBlocks(Sequence &s)
{
    const std::int64_t shared = m_prefix ? std::int64_t(s.blocks.size()) * m_prefix->blockTokens() : 0;
    m_kvTokens -= roundUp(s.cached) - shared;
    if (m_prefix)
        m_prefix->release(s.blocks, m_now);
    s.blocks.clear();
}

} // namespace bp
