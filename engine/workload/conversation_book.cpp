#include "conversation_book.h"

#include "prefix_tokens.h"

namespace bp {

void ConversationBook::sent(Key turn, std::vector<TokenId> prompt, int answerLength)
{
    Turn &t = m_turns[turn];
    t.prompt = std::move(prompt);
    t.answerLength = answerLength;
}

void ConversationBook::ended(Key turn, std::vector<TokenId> answer)
{
    const auto it = m_turns.find(turn);
    if (it != m_turns.end() && it->second.answerLength > 0) // else the ids are an echo of the prompt
        it->second.answer = std::move(answer);
}

void ConversationBook::release(TimePoint at, std::uint64_t order, Key key)
{
    m_released.push({at, order, key});
}

std::optional<ConversationBook::Due> ConversationBook::nextReleased() const
{
    return m_released.empty() ? std::nullopt : std::optional(m_released.top());
}

ConversationBook::Due ConversationBook::popReleased()
{
    const Due d = m_released.top();
    m_released.pop();
    return d;
}

std::vector<TokenId> ConversationBook::nextPrompt(Key previous, std::int64_t conversation, int turn,
                                                  const std::vector<TokenId> &newText, int vocabSize)
{
    Turn before;
    if (const auto it = m_turns.find(previous); it != m_turns.end()) {
        before = std::move(it->second);
        m_turns.erase(it);
    }
    // The stand-in is seeded by the conversation and turn: the same in every replay.
    const std::uint64_t seed = std::uint64_t(conversation) * 1'000'003u + std::uint64_t(turn);
    return nextTurnPrompt(before.prompt, before.answer, before.answerLength, seed, newText, vocabSize);
}

} // namespace bp
