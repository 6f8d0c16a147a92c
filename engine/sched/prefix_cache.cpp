#include "prefix_cache.h"

#include <algorithm>
#include <cassert>

namespace bp {

namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v)
{
    // splitmix64's finaliser over a running combination
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebULL;
    h ^= h >> 31;
    return h;
}

} // namespace

PrefixCache::PrefixCache(int blockTokens) : m_blockTokens(std::max(1, blockTokens)) {}

std::uint64_t PrefixCache::blockHash(std::uint64_t parent, std::span<const TokenId> tokens)
{
    std::uint64_t h = mix(0x6b76'6361'6368'6501ULL, parent);
    for (TokenId t : tokens)
        h = mix(h, std::uint64_t(std::uint32_t(t)));
    h = mix(h, tokens.size());
    return h == 0 ? 1 : h; // 0 is "no parent"
}

PrefixCache::Match PrefixCache::lookup(std::span<const TokenId> context, std::size_t maxBlocks) const
{
    Match m;
    const auto B = std::size_t(m_blockTokens);
    std::uint64_t parent = 0;
    for (std::size_t b = 0; b < maxBlocks && (b + 1) * B <= context.size(); ++b) {
        const std::span<const TokenId> tokens = context.subspan(b * B, B);
        const std::uint64_t h = blockHash(parent, tokens);
        const auto it = m_blocks.find(h);
        if (it == m_blocks.end() || it->second.parent != parent ||
            !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(), it->second.tokens.end()))
            break;
        m.blocks.push_back(h);
        m.unreferenced += it->second.refs == 0;
        parent = h;
    }
    return m;
}

void PrefixCache::acquire(const std::vector<std::uint64_t> &blocks, TimePoint now)
{
    for (std::uint64_t h : blocks) {
        const auto it = m_blocks.find(h);
        assert(it != m_blocks.end());
        if (it == m_blocks.end())
            continue;
        Block &b = it->second;
        if (b.refs++ == 0)
            m_lru.erase(b.lru);
        b.lastUsed = now;
    }
}

PrefixCache::Inserted PrefixCache::insert(std::uint64_t hash, std::uint64_t parent,
                                          std::span<const TokenId> tokens, TimePoint now)
{
    const auto it = m_blocks.find(hash);
    if (it != m_blocks.end()) {
        Block &b = it->second;
        if (b.parent != parent || !std::equal(tokens.begin(), tokens.end(), b.tokens.begin(), b.tokens.end()))
            return Inserted::Collision;
        if (b.refs++ == 0)
            m_lru.erase(b.lru);
        b.lastUsed = now;
        return Inserted::Existing;
    }
    Block b;
    b.parent = parent;
    b.tokens.assign(tokens.begin(), tokens.end());
    b.refs = 1;
    b.lastUsed = now;
    m_blocks.emplace(hash, std::move(b));
    return Inserted::New;
}

void PrefixCache::release(const std::vector<std::uint64_t> &blocks, TimePoint now)
{
    for (auto r = blocks.rbegin(); r != blocks.rend(); ++r) { // tail first: evicted first
        const auto it = m_blocks.find(*r);
        if (it == m_blocks.end() || it->second.refs == 0)
            continue; // dropped by clear() meanwhile
        Block &b = it->second;
        b.lastUsed = now;
        if (--b.refs == 0)
            b.lru = m_lru.insert(m_lru.end(), *r);
    }
}

std::optional<std::uint64_t> PrefixCache::evictOne()
{
    if (m_lru.empty())
        return std::nullopt;
    const std::uint64_t h = m_lru.front();
    m_lru.pop_front();
    m_blocks.erase(h);
    ++m_evictions;
    return h;
}

std::vector<std::uint64_t> PrefixCache::clear()
{
    std::vector<std::uint64_t> all;
    all.reserve(m_blocks.size());
    for (const auto &[h, b] : m_blocks)
        all.push_back(h);
    m_blocks.clear();
    m_lru.clear();
    return all;
}

int PrefixCache::references(std::uint64_t hash) const
{
    const auto it = m_blocks.find(hash);
    return it == m_blocks.end() ? 0 : it->second.refs;
}

std::optional<TimePoint> PrefixCache::lastUsed(std::uint64_t hash) const
{
    const auto it = m_blocks.find(hash);
    if (it == m_blocks.end())
        return std::nullopt;
    return it->second.lastUsed;
}

} // namespace bp
