#include "arrival_plan.h"

#include <algorithm>

namespace bp {

ArrivalPlan::ArrivalPlan(std::span<const PlannedArrival> arrivals, TimePoint start, int vocabSize)
    : m_arrivals(arrivals), m_start(start), m_vocab(std::max(1, vocabSize))
{
}

std::optional<ArrivalPlan::Due> ArrivalPlan::next()
{
    while (m_open < m_arrivals.size() && m_arrivals[m_open].followUp())
        ++m_open;
    std::optional<Due> due;
    if (m_open < m_arrivals.size())
        due = Due{m_start + m_arrivals[m_open].offset, m_open};
    if (const auto r = m_book.nextReleased();
        r && (!due || r->at < due->at || (r->at == due->at && r->order < due->index)))
        due = Due{r->at, std::size_t(r->key)};
    return due;
}

std::optional<TimePoint> ArrivalPlan::releasedAt() const
{
    const auto r = m_book.nextReleased();
    return r ? std::optional(r->at) : std::nullopt;
}

bool ArrivalPlan::more()
{
    while (m_open < m_arrivals.size() && m_arrivals[m_open].followUp())
        ++m_open;
    return m_open < m_arrivals.size() || m_book.anyReleased();
}

void ArrivalPlan::take(const Due &due)
{
    if (due.index == m_open)
        ++m_open;
    else
        m_book.popReleased();
}

std::vector<TokenId> ArrivalPlan::prompt(std::size_t index, std::vector<TokenId> own)
{
    const PlannedArrival &a = m_arrivals[index];
    if (!a.followUp())
        return own;
    return m_book.nextPrompt(std::uint64_t(a.previous), a.conversation, a.turn, own, m_vocab);
}

void ArrivalPlan::sent(std::size_t index, const std::vector<TokenId> &prompt)
{
    const PlannedArrival &a = m_arrivals[index];
    if (a.next >= 0)
        m_book.sent(index, prompt, a.maxNewTokens);
}

void ArrivalPlan::ended(std::size_t index, TimePoint at, std::vector<TokenId> answer)
{
    const PlannedArrival &a = m_arrivals[index];
    if (a.next < 0)
        return;
    const auto next = std::size_t(a.next);
    m_book.ended(index, std::move(answer));
    m_book.release(at + m_arrivals[next].think, next, next);
}

} // namespace bp
