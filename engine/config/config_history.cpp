#include "config_history.h"

namespace bp {

const ConfigChange &ConfigHistory::operator[](std::size_t i) const
{
    for (const auto &chunk : m_chunks) {
        if (i < chunk->size())
            return (*chunk)[i];
        i -= chunk->size();
    }
    return back(); // out of range: like std::vector, a caller bug; stay defined
}

void ConfigHistory::push_back(ConfigChange change)
{
    // Chunk 0 holds the first entry alone; later chunks fill up to kChunk.
    if (m_chunks.size() <= 1 || m_chunks.back()->size() >= kChunk) {
        m_chunks.push_back(std::make_shared<const std::vector<ConfigChange>>(1, std::move(change)));
    } else {
        // Copy-on-write of the last chunk only: copies still share the rest.
        auto last = std::make_shared<std::vector<ConfigChange>>();
        last->reserve(m_chunks.back()->size() + 1);
        *last = *m_chunks.back();
        last->push_back(std::move(change));
        m_chunks.back() = std::move(last);
    }
    ++m_size;
    if (m_size > kMaxEntries && m_chunks.size() > 2) {
        m_size -= m_chunks[1]->size();
        m_chunks.erase(m_chunks.begin() + 1);
    }
}

} // namespace bp
