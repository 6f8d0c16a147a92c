#include "traffic_pacer.h"

#include <algorithm>

namespace bp {

TrafficPacer::TrafficPacer(WorkloadSpec spec) : m_schedule(std::move(spec)) {}

void TrafficPacer::fillOpen(TimePoint start)
{
    if (!m_plan)
        m_plan.emplace(start, m_schedule.spec().vocabSize);
    if (m_openInPlan || m_scheduleDone)
        return;
    const std::optional<Arrival> open = m_schedule.next();
    m_scheduleDone = !open;
    if (!open)
        return;
    PlannedArrival planned;
    planned.offset = open->offset;
    planned.maxNewTokens = open->outputTokens;
    planned.conversation = open->conversation;
    planned.turn = open->turn;
    m_arrivals.emplace(m_plan->add(std::move(planned)), *open);
    m_openInPlan = true;
}

// Every position below the first one still to go out or to be answered is done.
void TrafficPacer::forgetDone()
{
    std::size_t first = m_plan->size();
    if (!m_arrivals.empty())
        first = std::min(first, m_arrivals.begin()->first);
    if (!m_waiting.empty())
        first = std::min(first, m_waiting.begin()->first);
    m_plan->forgetBefore(first);
}

std::optional<TimePoint> TrafficPacer::nextDue(TimePoint start)
{
    std::lock_guard lock(m_mutex);
    fillOpen(start);
    const auto due = m_plan->next();
    return due ? std::optional(due->at) : std::nullopt;
}

std::optional<TrafficPacer::Item> TrafficPacer::take(TimePoint start)
{
    std::lock_guard lock(m_mutex);
    fillOpen(start);
    const std::optional<ArrivalPlan::Due> due = m_plan->next();
    if (!due)
        return std::nullopt;
    m_plan->take(*due);
    const auto it = m_arrivals.find(due->index);
    Item item{it->second, due->at, {}, due->index + 1};
    m_arrivals.erase(it);
    const WorkloadSpec &spec = m_schedule.spec();
    if ((*m_plan)[due->index].followUp()) {
        item.arrival.offset = due->at - m_plan->start();
        item.tokens = m_plan->prompt(due->index, m_schedule.tokens(item.arrival.inputTokens));
    } else {
        m_openInPlan = false;
        item.tokens = m_schedule.tokens(item.arrival);
    }
    // The context grows each turn: past the longest input the target takes,
    // the prompt is cut to it (the shared prefix kept), as first turns are.
    if (spec.lengthCap > 0 && item.tokens.size() > std::size_t(spec.lengthCap))
        item.tokens.resize(std::size_t(spec.lengthCap));
    // Its follow-up takes the next position now, its new text drawn now.
    if (auto next = m_schedule.followUp(item.arrival, Duration{})) {
        PlannedArrival planned;
        planned.maxNewTokens = next->outputTokens;
        planned.conversation = next->conversation;
        planned.turn = next->turn;
        planned.think = fromSeconds(spec.thinkTimeS);
        planned.previous = std::ptrdiff_t(due->index);
        const std::size_t position = m_plan->add(std::move(planned));
        m_arrivals.emplace(position, *next);
        m_waiting.emplace(due->index, position);
        m_plan->sent(due->index, item.tokens);
    }
    forgetDone();
    return item;
}

void TrafficPacer::completed(std::uint64_t key, TimePoint at, const std::vector<TokenId> &answer)
{
    {
        std::lock_guard lock(m_mutex);
        const auto it = key ? m_waiting.find(std::size_t(key - 1)) : m_waiting.end();
        if (it == m_waiting.end())
            return;
        m_plan->ended(it->first, at, answer);
        m_waiting.erase(it);
        ++m_releases;
    }
    m_cv.notify_all();
}

bool TrafficPacer::finished()
{
    std::lock_guard lock(m_mutex);
    return m_scheduleDone && m_arrivals.empty() && m_waiting.empty();
}

void TrafficPacer::waitUntil(TimePoint until)
{
    std::unique_lock lock(m_mutex);
    const std::uint64_t seen = m_releases;
    m_cv.wait_until(lock, until, [&] { return m_releases != seen; });
}

} // namespace bp
