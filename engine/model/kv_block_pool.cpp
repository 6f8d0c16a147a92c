#include "kv_block_pool.h"

#include <algorithm>
#include <string>

namespace bp {

KvBlockPool::KvBlockPool(std::int64_t blocks, int blockTokens, int reserved)
    : m_blockTokens(std::max(1, blockTokens)), m_reserved(std::max(0, reserved)),
      m_total(std::max<std::int64_t>(0, blocks))
{
    m_refs.assign(std::size_t(m_reserved + m_total), 0);
    m_free.reserve(std::size_t(m_total));
    // A stack with the lowest number on top: a freshly touched pool stays
    // dense (on the CPU the pool's pages are faulted in only as used).
    for (std::int64_t b = m_reserved + m_total - 1; b >= m_reserved; --b)
        m_free.push_back(std::int32_t(b));
}

std::int64_t KvBlockPool::freeBlocks() const
{
    MutexLock lock(m_mutex);
    return std::int64_t(m_free.size());
}

std::optional<std::vector<std::int32_t>> KvBlockPool::allocate(std::int64_t n)
{
    MutexLock lock(m_mutex);
    if (n < 0 || n > std::int64_t(m_free.size()))
        return std::nullopt;
    std::vector<std::int32_t> out(static_cast<std::size_t>(n));
    for (auto &b : out) {
        b = m_free.back();
        m_free.pop_back();
        m_refs[std::size_t(b)] = 1;
    }
    return out;
}

void KvBlockPool::ref(std::span<const std::int32_t> blocks)
{
    MutexLock lock(m_mutex);
    for (std::int32_t b : blocks)
        if (b >= m_reserved && std::size_t(b) < m_refs.size())
            ++m_refs[std::size_t(b)];
}

void KvBlockPool::unrefLocked(std::int32_t b)
{
    if (b < m_reserved || std::size_t(b) >= m_refs.size() || m_refs[std::size_t(b)] <= 0)
        return;
    if (--m_refs[std::size_t(b)] == 0)
        m_free.push_back(b);
}

void KvBlockPool::unref(std::span<const std::int32_t> blocks)
{
    MutexLock lock(m_mutex);
    // Last to first, so that a run handed back comes out of the stack in its
    // order again: a sequence's blocks stay ascending and mostly consecutive,
    // which a CPU's prefetchers follow (a decode step over blocks in
    // descending or scattered order read its KV cache at half the speed).
    for (auto it = blocks.rbegin(); it != blocks.rend(); ++it)
        unrefLocked(*it);
}

int KvBlockPool::refs(std::int32_t block) const
{
    MutexLock lock(m_mutex);
    return block >= 0 && std::size_t(block) < m_refs.size() ? m_refs[std::size_t(block)] : 0;
}

bool KvBlockPool::keep(std::uint64_t hash, std::span<const std::int32_t> blocks, std::span<const TokenId> tokens)
{
    MutexLock lock(m_mutex);
    if (m_kept.count(hash))
        return false;
    for (std::int32_t b : blocks)
        if (b >= m_reserved && std::size_t(b) < m_refs.size())
            ++m_refs[std::size_t(b)];
    m_kept.emplace(hash, Kept{{blocks.begin(), blocks.end()}, {tokens.begin(), tokens.end()}});
    return true;
}

std::optional<std::vector<std::int32_t>> KvBlockPool::share(std::uint64_t hash, std::span<const TokenId> tokens)
{
    MutexLock lock(m_mutex);
    const auto it = m_kept.find(hash);
    if (it == m_kept.end() || !std::equal(tokens.begin(), tokens.end(), it->second.tokens.begin(),
                                          it->second.tokens.end()))
        return std::nullopt;
    for (std::int32_t b : it->second.blocks)
        ++m_refs[std::size_t(b)];
    return it->second.blocks;
}

Result<std::vector<std::int32_t>> KvBlockPool::chain(std::span<const std::uint64_t> hashes,
                                                     std::vector<TokenId> *tokens)
{
    MutexLock lock(m_mutex);
    std::vector<std::int32_t> out;
    for (std::size_t i = 0; i < hashes.size(); ++i) {
        const auto it = m_kept.find(hashes[i]);
        if (it == m_kept.end())
            return Status(StatusCode::Internal, "prefix block " + std::to_string(i) + " (hash " +
                                                    std::to_string(hashes[i]) + ") is not kept by the model");
        out.insert(out.end(), it->second.blocks.begin(), it->second.blocks.end());
    }
    if (tokens)
        for (std::uint64_t h : hashes) {
            const Kept &k = m_kept.at(h);
            tokens->insert(tokens->end(), k.tokens.begin(), k.tokens.end());
        }
    for (std::int32_t b : out)
        ++m_refs[std::size_t(b)];
    return out;
}

std::int64_t KvBlockPool::keptTokens(std::span<const std::uint64_t> hashes) const
{
    MutexLock lock(m_mutex);
    std::int64_t n = 0;
    for (std::uint64_t h : hashes)
        if (const auto it = m_kept.find(h); it != m_kept.end())
            n += std::int64_t(it->second.tokens.size());
    return n;
}

void KvBlockPool::drop(std::span<const std::uint64_t> hashes)
{
    MutexLock lock(m_mutex);
    for (std::uint64_t h : hashes) {
        const auto it = m_kept.find(h);
        if (it == m_kept.end())
            continue;
        for (auto b = it->second.blocks.rbegin(); b != it->second.blocks.rend(); ++b)
            unrefLocked(*b);
        m_kept.erase(it);
    }
}

std::size_t KvBlockPool::keptEntries() const
{
    MutexLock lock(m_mutex);
    return m_kept.size();
}

} // namespace bp
