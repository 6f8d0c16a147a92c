#include "prefix_tokens.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace bp {

namespace {

// SplitMix64: a fixed, platform-independent generator (std::mt19937_64 is
// too, but a block is short and this needs no 2.5 KB of state per block).
std::uint64_t splitMix(std::uint64_t &state)
{
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fillSeeded(std::uint64_t seed, int vocabSize, TokenId *out, std::size_t n)
{
    std::uint64_t state = seed;
    const std::uint64_t vocab = std::uint64_t(std::max(1, vocabSize));
    for (std::size_t k = 0; k < n; ++k)
        out[k] = TokenId(splitMix(state) % vocab);
}

// Distinct streams for hash ids and answer stand-ins.
constexpr std::uint64_t kBlockSalt = 0x426c6f636b496473ull;  // "BlockIds"
constexpr std::uint64_t kAnswerSalt = 0x416e737765727321ull; // "Answers!"

} // namespace

std::vector<TokenId> blockTokenIds(std::int64_t hashId, int blockTokens, int vocabSize)
{
    std::vector<TokenId> ids(std::size_t(std::max(0, blockTokens)));
    fillSeeded(std::uint64_t(hashId) ^ kBlockSalt, vocabSize, ids.data(), ids.size());
    return ids;
}

std::vector<TokenId> promptTokens(const PrefixBlocks &blocks, int blockTokens, int inputTokens, int vocabSize,
                                  std::mt19937_64 &rng)
{
    std::vector<TokenId> t(std::size_t(std::max(0, inputTokens)));
    std::size_t filled = 0;
    if (blockTokens > 0)
        for (std::int64_t id : blocks) {
            if (filled >= t.size())
                break;
            const std::size_t n = std::min(std::size_t(blockTokens), t.size() - filled);
            // The first n ids of the whole block: a partial last block is a
            // prefix of the same block elsewhere.
            fillSeeded(std::uint64_t(id) ^ kBlockSalt, vocabSize, t.data() + filled, n);
            filled += n;
        }
    std::uniform_int_distribution<TokenId> token(0, std::max(1, vocabSize) - 1);
    for (std::size_t k = filled; k < t.size(); ++k)
        t[k] = token(rng);
    return t;
}

std::vector<TokenId> nextTurnPrompt(const std::vector<TokenId> &previousPrompt,
                                    const std::vector<TokenId> &answer, int answerLength,
                                    std::uint64_t standInSeed, const std::vector<TokenId> &newText,
                                    int vocabSize)
{
    std::vector<TokenId> t;
    const std::size_t answerLen = answer.empty() ? std::size_t(std::max(0, answerLength)) : answer.size();
    t.reserve(previousPrompt.size() + answerLen + newText.size());
    t.insert(t.end(), previousPrompt.begin(), previousPrompt.end());
    if (!answer.empty()) {
        t.insert(t.end(), answer.begin(), answer.end());
    } else {
        const std::size_t at = t.size();
        t.resize(at + answerLen);
        fillSeeded(standInSeed ^ kAnswerSalt, vocabSize, t.data() + at, answerLen);
    }
    t.insert(t.end(), newText.begin(), newText.end());
    return t;
}

PrefixShare prefixShare(const std::vector<TraceRow> &rows, const std::vector<PrefixBlocks> &hashIds,
                        int blockTokens)
{
    PrefixShare s;
    std::unordered_set<std::int64_t> seen;
    // A conversation's context so far (its last prompt and answer lengths).
    std::unordered_map<std::int64_t, std::pair<std::uint64_t, std::uint64_t>> context;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const TraceRow &row = rows[i];
        std::uint64_t previous = 0, answer = 0;
        if (row.conversation != 0)
            if (auto c = context.find(row.conversation); c != context.end())
                std::tie(previous, answer) = c->second;
        const std::uint64_t own = std::uint64_t(std::max(0, row.inputTokens));
        const std::uint64_t prompt = previous ? previous + answer + own : own;
        s.promptTokens += prompt;
        if (previous && blockTokens > 0) // the previous prompt's whole blocks are cached
            s.reusableTokens += previous / std::uint64_t(blockTokens) * std::uint64_t(blockTokens);
        if (!hashIds.empty() && blockTokens > 0) {
            std::uint64_t at = 0;
            for (std::int64_t id : hashIds[i]) {
                if (at >= own)
                    break;
                const std::uint64_t n = std::min<std::uint64_t>(std::uint64_t(blockTokens), own - at);
                if (!seen.insert(id).second && !previous)
                    s.reusableTokens += n;
                at += n;
            }
        }
        if (row.conversation != 0)
            context[row.conversation] = {prompt, std::uint64_t(std::max(0, row.outputTokens))};
    }
    return s;
}

PrefixShare prefixShareOfTokens(const std::vector<std::vector<TokenId>> &prompts, int blockTokens)
{
    PrefixShare s;
    std::unordered_set<std::uint64_t> seen;
    for (const auto &p : prompts) {
        s.promptTokens += p.size();
        if (blockTokens <= 0)
            continue;
        std::uint64_t key = 0xcbf29ce484222325ull; // FNV-1a over the chain
        for (std::size_t at = 0; at + std::size_t(blockTokens) <= p.size(); at += std::size_t(blockTokens)) {
            for (std::size_t k = at; k < at + std::size_t(blockTokens); ++k) {
                key ^= std::uint64_t(std::uint32_t(p[k]));
                key *= 0x100000001b3ull;
            }
            if (!seen.insert(key).second)
                s.reusableTokens += std::uint64_t(blockTokens);
        }
    }
    return s;
}

} // namespace bp
