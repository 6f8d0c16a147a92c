// The books of multi-turn conversations, without Qt: the one place that
// knows how a conversation goes on. A turn with a follow-up is remembered
// with its prompt while it runs; when it ends (answered, refused or
// failed) its follow-up is released a think time later, and the follow-up's
// prompt is the previous prompt, the previous answer (the generated ids
// when the target returned them, else a stand-in of the answer's length,
// seeded by the conversation and turn so every replay sends the same) and
// its own new text (prefix_tokens.h: nextTurnPrompt).
//
// Used through ArrivalPlan (arrival_plan.h) by the live traffic pacer
// (traffic_pacer.h), the replay driver (real and virtual clock) and the
// simulator. Keys are the caller's: a plan position.
//
// Not thread-safe: a caller with completions on other threads locks around it.
#pragma once

#include "engine/core/clock.h"
#include "engine/core/request.h"

#include <cstdint>
#include <optional>
#include <queue>
#include <unordered_map>
#include <vector>

namespace bp {

class ConversationBook {
public:
    using Key = std::uint64_t;

    // A released follow-up: due `at`; among those due at once, the lower
    // `order` first (a plan position).
    struct Due {
        TimePoint at{};
        std::uint64_t order = 0;
        Key key = 0; // the caller's: what to send
        bool operator>(const Due &o) const { return at != o.at ? at > o.at : order > o.order; }
    };

    // Turn `turn`, which has a follow-up, went out with `prompt` asking for
    // `answerLength` new tokens (0: its returned ids echo the prompt and are
    // not an answer).
    void sent(Key turn, std::vector<TokenId> prompt, int answerLength);
    // Turn `turn` ended with `answer` (empty: refused or answered in text).
    void ended(Key turn, std::vector<TokenId> answer);
    // Turn `turn` has no follow-up after all: forget its prompt.
    void forget(Key turn) { m_turns.erase(turn); }
    // Its follow-up `key` is due at `at` (the end plus the think time).
    void release(TimePoint at, std::uint64_t order, Key key);

    // The earliest released follow-up; nullopt when none.
    std::optional<Due> nextReleased() const;
    Due popReleased();
    bool anyReleased() const { return !m_released.empty(); }
    // Sent turns whose follow-up is not built yet.
    std::size_t remembered() const { return m_turns.size(); }

    // The prompt of turn `turn` of `conversation`, which follows `previous`:
    // previous prompt + answer (or its stand-in) + `newText`. Forgets `previous`.
    std::vector<TokenId> nextPrompt(Key previous, std::int64_t conversation, int turn,
                                    const std::vector<TokenId> &newText, int vocabSize);

private:
    struct Turn {
        std::vector<TokenId> prompt, answer;
        int answerLength = 0;
    };
    std::unordered_map<Key, Turn> m_turns;
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> m_released;
};

} // namespace bp
