// ContinuousScheduler's sequence (private to continuous_*.cpp).
#pragma once

#include "continuous_scheduler.h"

namespace bp {

struct ContinuousScheduler::Sequence {
    Pending pending;
    std::uint64_t id = 0; // the model's live-sequence id; a new one on every join
    std::vector<TokenId> generated;
    std::int64_t cached = 0; // tokens of the context in the model's KV cache
    // Prefix caching: the cached blocks it references (its context's leading
    // whole blocks, in order), and whether its next whole blocks are cached.
    std::vector<std::uint64_t> blocks;
    bool caching = false;
    int cachedPromptTokens = 0; // prompt tokens served from the cache at its first join
    bool joined = false;        // has run at least once
    TimePoint firstJoin{}, firstToken{}, lastToken{};
    std::vector<Duration> gaps; // before each generated token after the first

    std::size_t contextSize() const { return pending.request.tokens.size() + generated.size(); }
    TokenId contextAt(std::size_t i) const
    {
        const auto &prompt = pending.request.tokens;
        return i < prompt.size() ? prompt[i] : generated[i - prompt.size()];
    }
    std::int64_t remaining() const { return std::int64_t(contextSize()) - cached; }
    bool decoding() const { return !generated.empty() && remaining() == 1; }
    bool isCancelled() const
    {
        const auto &flag = pending.request.cancelled;
        return flag && flag->load(std::memory_order_relaxed);
    }
};

} // namespace bp
