// The config history a Snapshot carries: every change of the session, oldest
// first, the initial config always kept, at most ~kMaxEntries entries.
//
// Why its own type: Engine::snapshot() runs 10 times a second under the
// engine mutex, and copying a std::vector of up to 1,000 ConfigChange values
// (each a whole BatchingConfig with its vectors and strings) made that lock
// hold grow with the session's age. Here the entries live in immutable,
// shared chunks of kChunk: a copy shares them (a handful of pointer copies),
// and push_back copies at most the last, partly filled chunk.
//
// It reads like a std::vector<ConfigChange> (size, [], front, back, range
// for) and is a value: a copy never changes when the original grows.
#pragma once

#include "engine/core/records.h"

#include <cstddef>
#include <iterator>
#include <memory>
#include <vector>

namespace bp {

class ConfigHistory {
public:
    static constexpr std::size_t kChunk = 64;
    static constexpr std::size_t kMaxEntries = 1000;

    class const_iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = ConfigChange;
        using difference_type = std::ptrdiff_t;
        using pointer = const ConfigChange *;
        using reference = const ConfigChange &;

        const_iterator() = default;
        reference operator*() const { return (*(*m_chunks)[m_chunk])[m_offset]; }
        pointer operator->() const { return &**this; }
        const_iterator &operator++()
        {
            if (++m_offset == (*m_chunks)[m_chunk]->size()) {
                ++m_chunk;
                m_offset = 0;
            }
            return *this;
        }
        const_iterator operator++(int)
        {
            const_iterator before = *this;
            ++*this;
            return before;
        }
        bool operator==(const const_iterator &o) const
        {
            return m_chunk == o.m_chunk && m_offset == o.m_offset;
        }

    private:
        friend class ConfigHistory;
        using Chunks = std::vector<std::shared_ptr<const std::vector<ConfigChange>>>;
        const_iterator(const Chunks *chunks, std::size_t chunk) : m_chunks(chunks), m_chunk(chunk) {}
        const Chunks *m_chunks = nullptr;
        std::size_t m_chunk = 0, m_offset = 0;
    };

    std::size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    const_iterator begin() const { return {&m_chunks, 0}; }
    const_iterator end() const { return {&m_chunks, m_chunks.size()}; }
    const ConfigChange &front() const { return m_chunks.front()->front(); }
    const ConfigChange &back() const { return m_chunks.back()->back(); }
    const ConfigChange &operator[](std::size_t i) const;

    // Appends. The first entry ever pushed (the initial config) has a chunk
    // of its own and stays; past kMaxEntries the oldest full chunk after it
    // is dropped.
    void push_back(ConfigChange change);

private:
    const_iterator::Chunks m_chunks; // every chunk non-empty
    std::size_t m_size = 0;
};

} // namespace bp
