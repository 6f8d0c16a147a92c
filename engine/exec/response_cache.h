// LRU response cache keyed by the exact input tokens and max_new_tokens
// (the generation parameters that change the answer; greedy decoding is
// deterministic). Bounded by entries and by bytes; thread-safe.
#pragma once

#include "engine/core/thread_annotations.h"

#include "engine/core/request.h"

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace bp {

struct CacheStats {
    std::uint64_t hits = 0, misses = 0, insertions = 0, evictions = 0;
    std::uint64_t entries = 0;
    std::int64_t bytes = 0;
};

class ResponseCache {
public:
    struct Value {
        std::vector<float> values;
        std::vector<TokenId> tokens;
    };

    void configure(int maxEntries, std::int64_t maxBytes); // evicts down to the new bounds
    void clear();
    std::optional<Value> lookup(const std::vector<TokenId> &input, int maxNewTokens);
    void insert(const std::vector<TokenId> &input, int maxNewTokens, const Value &value);
    CacheStats stats() const;

private:
    struct Entry {
        std::uint64_t hash;
        std::vector<TokenId> input;
        int maxNewTokens;
        Value value;
        std::int64_t bytes;
    };
    static std::uint64_t hashOf(const std::vector<TokenId> &input, int maxNewTokens);
    void evict() REQUIRES(m_mutex);

    mutable Mutex m_mutex;
    std::list<Entry> m_lru GUARDED_BY(m_mutex); // front = most recent
    std::unordered_multimap<std::uint64_t, std::list<Entry>::iterator> m_index GUARDED_BY(m_mutex);
    int m_maxEntries GUARDED_BY(m_mutex) = 10000;
    std::int64_t m_maxBytes GUARDED_BY(m_mutex) = 64LL << 20;
    CacheStats m_stats GUARDED_BY(m_mutex);
};

} // namespace bp
