#include "arrival_plan.h"

#include <algorithm>

namespace bp {

ArrivalPlan::ArrivalPlan(std::span<const PlannedArrival> arrivals, TimePoint start, int vocabSize)
    : m_arrivals(arrivals), m_start(start), m_vocab(std::max(1, vocabSize))
{
}

ArrivalPlan::ArrivalPlan(TimePoint start, int vocabSize)
    : m_start(start), m_vocab(std::max(1, vocabSize)), m_live(true)
{
}

std::size_t ArrivalPlan::add(PlannedArrival a)
{
    const std::size_t position = size();
    if (a.previous >= 0)
        m_window[std::size_t(a.previous) - m_base].next = std::ptrdiff_t(position);
    m_window.push_back(std::move(a));
    return position;
}

void ArrivalPlan::forgetBefore(std::size_t position)
{
    for (; m_base < position && !m_window.empty(); ++m_base)
        m_window.pop_front();
    m_open = std::max(m_open, m_base); // forgotten positions are no open-loop arrivals left
}

void ArrivalPlan::skipFollowUps()
{
    while (m_open < size() && (*this)[m_open].followUp())
        ++m_open;
}

std::optional<ArrivalPlan::Due> ArrivalPlan::next()
{
    skipFollowUps();
    std::optional<Due> due;
    if (m_open < size())
        due = Due{m_start + (*this)[m_open].offset, m_open};
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
    skipFollowUps();
    return m_open < size() || m_book.anyReleased();
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
    const PlannedArrival &a = (*this)[index];
    if (!a.followUp())
        return own;
    return m_book.nextPrompt(std::uint64_t(a.previous), a.conversation, a.turn, own, m_vocab);
}

void ArrivalPlan::sent(std::size_t index, const std::vector<TokenId> &prompt)
{
    const PlannedArrival &a = (*this)[index];
    if (a.next >= 0)
        m_book.sent(index, prompt, a.maxNewTokens);
}

void ArrivalPlan::ended(std::size_t index, TimePoint at, std::vector<TokenId> answer)
{
    const PlannedArrival &a = (*this)[index];
    if (a.next < 0)
        return;
    const auto next = std::size_t(a.next);
    m_book.ended(index, std::move(answer));
    m_book.release(at + (*this)[next].think, next, next);
}

} // namespace bp
