#include "traffic_pacer.h"

namespace bp {

TrafficPacer::TrafficPacer(WorkloadSpec spec) : m_schedule(std::move(spec)) {}

void TrafficPacer::fillOpen(TimePoint start)
{
    m_start = start;
    if (!m_open && !m_scheduleDone) {
        m_open = m_schedule.next();
        m_scheduleDone = !m_open;
    }
}

std::optional<TimePoint> TrafficPacer::nextDue(TimePoint start)
{
    std::lock_guard lock(m_mutex);
    fillOpen(start);
    std::optional<TimePoint> due;
    if (m_open)
        due = start + m_open->offset;
    if (const auto r = m_book.nextReleased(); r && (!due || r->at < *due))
        due = r->at;
    return due;
}

std::optional<TrafficPacer::Item> TrafficPacer::take(TimePoint start)
{
    std::lock_guard lock(m_mutex);
    fillOpen(start);
    const std::optional<ConversationBook::Due> released = m_book.nextReleased();
    const bool openFirst = m_open && (!released || start + m_open->offset <= released->at);
    Item item;
    if (openFirst) {
        item.arrival = *m_open;
        m_open.reset();
        item.when = start + item.arrival.offset;
        item.tokens = m_schedule.tokens(item.arrival);
    } else if (released) {
        m_book.popReleased();
        const auto it = m_followUps.find(released->key);
        item.arrival = it->second;
        m_followUps.erase(it);
        item.when = released->at;
        item.tokens =
            m_book.nextPrompt(released->key, item.arrival.conversation, item.arrival.turn,
                              m_schedule.tokens(item.arrival.inputTokens), m_schedule.spec().vocabSize);
    } else {
        return std::nullopt;
    }
    // The context grows each turn: past the longest input the target takes,
    // the prompt is cut to it (the shared prefix kept), as first turns are.
    if (const int cap = m_schedule.spec().lengthCap; cap > 0 && item.tokens.size() > std::size_t(cap))
        item.tokens.resize(std::size_t(cap));
    item.key = m_nextKey++;
    if (item.arrival.conversation != 0 && item.arrival.turn < m_schedule.spec().turnsPerConversation) {
        m_waiting.emplace(item.key, item.arrival);
        m_book.sent(item.key, item.tokens, item.arrival.outputTokens);
    }
    return item;
}

void TrafficPacer::completed(std::uint64_t key, TimePoint at, const std::vector<TokenId> &answer)
{
    {
        std::lock_guard lock(m_mutex);
        auto it = m_waiting.find(key);
        if (it == m_waiting.end())
            return;
        const Arrival arrival = it->second;
        m_waiting.erase(it);
        auto next = m_schedule.followUp(arrival, at - m_start);
        if (!next) {
            m_book.forget(key);
            return;
        }
        m_book.ended(key, answer);
        const TimePoint due = at + fromSeconds(m_schedule.spec().thinkTimeS);
        next->offset = due - m_start;
        m_followUps.emplace(key, *next);
        m_book.release(due, m_releaseOrder++, key);
    }
    m_cv.notify_all();
}

bool TrafficPacer::finished()
{
    std::lock_guard lock(m_mutex);
    return m_scheduleDone && !m_open && !m_book.anyReleased() && m_waiting.empty();
}

void TrafficPacer::waitUntil(TimePoint until)
{
    std::unique_lock lock(m_mutex);
    const std::uint64_t seen = m_releaseOrder;
    m_cv.wait_until(lock, until, [&] { return m_releaseOrder != seen; });
}

} // namespace bp
