#include "traffic_pacer.h"

#include "prefix_tokens.h"

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
    if (!m_released.empty() && (!due || m_released.top().at < *due))
        due = m_released.top().at;
    return due;
}

std::optional<TrafficPacer::Item> TrafficPacer::take(TimePoint start)
{
    std::lock_guard lock(m_mutex);
    fillOpen(start);
    const bool openFirst = m_open && (m_released.empty() || start + m_open->offset <= m_released.top().at);
    Item item;
    if (openFirst) {
        item.arrival = *m_open;
        m_open.reset();
        item.when = start + item.arrival.offset;
        item.tokens = m_schedule.tokens(item.arrival);
    } else if (!m_released.empty()) {
        Released r = m_released.top();
        m_released.pop();
        item.arrival = r.arrival;
        item.when = r.at;
        item.tokens = std::move(r.context);
        std::vector<TokenId> own = m_schedule.tokens(item.arrival.inputTokens);
        item.tokens.insert(item.tokens.end(), own.begin(), own.end());
    } else {
        return std::nullopt;
    }
    // The context grows each turn: past the longest input the target takes,
    // the prompt is cut to it (the shared prefix kept), as first turns are.
    if (const int cap = m_schedule.spec().lengthCap; cap > 0 && item.tokens.size() > std::size_t(cap))
        item.tokens.resize(std::size_t(cap));
    item.key = m_nextKey++;
    if (item.arrival.conversation != 0 && item.arrival.turn < m_schedule.spec().turnsPerConversation)
        m_waiting.emplace(item.key, Pending{item.arrival, item.tokens});
    return item;
}

void TrafficPacer::completed(std::uint64_t key, TimePoint at, const std::vector<TokenId> &answer)
{
    {
        std::lock_guard lock(m_mutex);
        auto it = m_waiting.find(key);
        if (it == m_waiting.end())
            return;
        Pending p = std::move(it->second);
        m_waiting.erase(it);
        auto next = m_schedule.followUp(p.arrival, at - m_start);
        if (!next)
            return;
        const std::uint64_t seed =
            std::uint64_t(p.arrival.conversation) * 1'000'003u + std::uint64_t(next->turn);
        std::vector<TokenId> context =
            nextTurnPrompt(p.prompt, p.arrival.outputTokens > 0 ? answer : std::vector<TokenId>{},
                           p.arrival.outputTokens, seed, {}, m_schedule.spec().vocabSize);
        const TimePoint due = at + fromSeconds(m_schedule.spec().thinkTimeS);
        next->offset = due - m_start;
        m_released.push({due, m_releaseOrder++, *next, std::move(context)});
    }
    m_cv.notify_all();
}

bool TrafficPacer::finished()
{
    std::lock_guard lock(m_mutex);
    return m_scheduleDone && !m_open && m_released.empty() && m_waiting.empty();
}

void TrafficPacer::waitUntil(TimePoint until)
{
    std::unique_lock lock(m_mutex);
    const std::uint64_t seen = m_releaseOrder;
    m_cv.wait_until(lock, until, [&] { return m_releaseOrder != seen; });
}

} // namespace bp
