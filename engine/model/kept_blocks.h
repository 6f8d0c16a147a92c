// A model's side of prefix caching (StepItem::prefix / ::publish,
// StepModel::dropBlocks): the KV blocks it keeps beyond the sequences that
// computed them, by hash. `T` is whatever the model needs to start a new
// sequence from a block: a decoder its keys and values, builtin:echo its
// hash state, the simulator's cost model the block's length.
// Thread-safe (steps over disjoint sequences may run concurrently).
#pragma once

#include "engine/core/result.h"

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace bp {

template <class T> class KeptBlocks {
public:
    // Keeps `value` under `hash` unless a block is kept under it already.
    void keep(std::uint64_t hash, T value)
    {
        std::lock_guard lock(m_mutex);
        m_blocks.try_emplace(hash, std::move(value));
    }
    // The blocks of `hashes`, in order; Internal naming the first
    // one not kept (a scheduler bug: it must not start from a dropped block).
    Result<std::vector<T>> chain(const std::vector<std::uint64_t> &hashes) const
    {
        std::lock_guard lock(m_mutex);
        std::vector<T> out;
        out.reserve(hashes.size());
        for (std::size_t i = 0; i < hashes.size(); ++i) {
            const auto it = m_blocks.find(hashes[i]);
            if (it == m_blocks.end())
                return Status(StatusCode::Internal, "prefix block " + std::to_string(i) + " (hash " +
                                                        std::to_string(hashes[i]) +
                                                        ") is not kept by the model");
            out.push_back(it->second);
        }
        return out;
    }
    void drop(const std::vector<std::uint64_t> &hashes)
    {
        std::lock_guard lock(m_mutex);
        for (std::uint64_t h : hashes)
            m_blocks.erase(h);
    }
    std::size_t size() const
    {
        std::lock_guard lock(m_mutex);
        return m_blocks.size();
    }

private:
    mutable std::mutex m_mutex;
    std::unordered_map<std::uint64_t, T> m_blocks;
};

} // namespace bp
