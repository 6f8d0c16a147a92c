// Seeded token ids in [1, vocab), for the steps a profile or a calibration
// times: a mixture-of-experts model routes a varied prompt to varied experts
// (one repeated id would always pick the same ones), and the same seed gives
// the same ids on every run. A 64-bit LCG (Knuth's MMIX constants), its high
// bits taken.
#pragma once

#include "engine/core/request.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace bp {

class SeededTokens {
public:
    SeededTokens(std::uint64_t seed, int vocabSize)
        : m_state(seed * kMul + kAdd), m_range(std::uint64_t(std::max(1, vocabSize - 1)))
    {
    }
    TokenId next()
    {
        m_state = m_state * kMul + kAdd;
        return TokenId(1 + (m_state >> 33) % m_range);
    }
    std::vector<TokenId> take(std::size_t n)
    {
        std::vector<TokenId> ids(n);
        for (TokenId &id : ids)
            id = next();
        return ids;
    }

private:
    static constexpr std::uint64_t kMul = 6364136223846793005ull, kAdd = 1442695040888963407ull;
    std::uint64_t m_state;
    std::uint64_t m_range;
};

} // namespace bp
