#include "response_cache.h"

namespace bp {

std::uint64_t ResponseCache::hashOf(const std::vector<TokenId> &input, int maxNewTokens)
{
    std::uint64_t h = 1469598103934665603ULL; // FNV-1a
    auto mix = [&](std::uint32_t v) {
        for (int i = 0; i < 4; ++i) {
            h ^= (v >> (8 * i)) & 0xff;
            h *= 1099511628211ULL;
        }
    };
    mix(std::uint32_t(maxNewTokens));
    for (TokenId t : input)
        mix(std::uint32_t(t));
    return h;
}

void ResponseCache::configure(int maxEntries, std::int64_t maxBytes)
{
    MutexLock lock(m_mutex);
    m_maxEntries = maxEntries;
    m_maxBytes = maxBytes;
    evict();
}

void ResponseCache::clear()
{
    MutexLock lock(m_mutex);
    m_lru.clear();
    m_index.clear();
    m_stats.entries = 0;
    m_stats.bytes = 0;
}

std::optional<ResponseCache::Value> ResponseCache::lookup(const std::vector<TokenId> &input, int maxNewTokens)
{
    const std::uint64_t h = hashOf(input, maxNewTokens);
    MutexLock lock(m_mutex);
    auto [it, end] = m_index.equal_range(h);
    for (; it != end; ++it) {
        auto entry = it->second;
        if (entry->maxNewTokens == maxNewTokens && entry->input == input) {
            m_lru.splice(m_lru.begin(), m_lru, entry);
            ++m_stats.hits;
            return entry->value;
        }
    }
    ++m_stats.misses;
    return std::nullopt;
}

void ResponseCache::insert(const std::vector<TokenId> &input, int maxNewTokens, const Value &value)
{
    const std::uint64_t h = hashOf(input, maxNewTokens);
    const std::int64_t bytes =
        std::int64_t(sizeof(Entry) + input.size() * sizeof(TokenId) + value.values.size() * sizeof(float) +
                     value.tokens.size() * sizeof(TokenId));
    MutexLock lock(m_mutex);
    if (bytes > m_maxBytes)
        return;
    auto [it, end] = m_index.equal_range(h);
    for (; it != end; ++it)
        if (it->second->maxNewTokens == maxNewTokens && it->second->input == input)
            return; // a concurrent batch computed the same answer
    m_lru.push_front(Entry{h, input, maxNewTokens, value, bytes});
    m_index.emplace(h, m_lru.begin());
    ++m_stats.insertions;
    ++m_stats.entries;
    m_stats.bytes += bytes;
    evict();
}

void ResponseCache::evict()
{
    while (!m_lru.empty() && (std::int64_t(m_stats.entries) > m_maxEntries || m_stats.bytes > m_maxBytes)) {
        auto last = std::prev(m_lru.end());
        auto [it, end] = m_index.equal_range(last->hash);
        for (; it != end; ++it)
            if (it->second == last) {
                m_index.erase(it);
                break;
            }
        m_stats.bytes -= last->bytes;
        --m_stats.entries;
        ++m_stats.evictions;
        m_lru.pop_back();
    }
}

CacheStats ResponseCache::stats() const
{
    MutexLock lock(m_mutex);
    return m_stats;
}

} // namespace bp
