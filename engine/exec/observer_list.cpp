#include "observer_list.h"

#include <atomic>
#include <cstdio>
#include <exception>

namespace bp {

void ObserverList::add(std::shared_ptr<EngineObserver> observer)
{
    MutexLock lock(m_mutex);
    auto next = std::make_shared<List>(*m_list);
    next->push_back(std::move(observer));
    m_list = std::move(next);
}

void ObserverList::remove(const std::shared_ptr<EngineObserver> &observer)
{
    MutexLock lock(m_mutex);
    auto next = std::make_shared<List>(*m_list);
    std::erase(*next, observer);
    m_list = std::move(next);
}

std::shared_ptr<const ObserverList::List> ObserverList::current() const
{
    MutexLock lock(m_mutex);
    return m_list;
}

void reportObserverThrew(const char *what, const char *message)
{
    static std::atomic<int> reported{0};
    if (reported.fetch_add(1, std::memory_order_relaxed) >= 10)
        return;
    if (message)
        std::fprintf(stderr, "batchpilot: an observer's %s threw: %s\n", what, message);
    else
        std::fprintf(stderr, "batchpilot: an observer's %s threw a non-standard exception\n", what);
}

void complete(Completion &done, Response &&response)
{
    try {
        done(std::move(response));
    } catch (const std::exception &e) {
        std::fprintf(stderr, "batchpilot: completion threw: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "batchpilot: completion threw a non-standard exception\n");
    }
}

} // namespace bp
