// The engine's observers: a copy-on-write list (adding or removing one
// copies the list; notifying takes a reference under a short lock and calls
// without it), and the rules for calling foreign code: whatever an observer
// or a completion throws is caught and reported on stderr (the first few
// times), and the others still run.
#pragma once

#include "engine/core/thread_annotations.h"

#include "engine/core/records.h"
#include "engine/core/request.h"

#include <exception>
#include <memory>
#include <mutex>
#include <vector>

namespace bp {

class ObserverList {
public:
    using List = std::vector<std::shared_ptr<EngineObserver>>;

    ObserverList() : m_list(std::make_shared<const List>()) {}
    void add(std::shared_ptr<EngineObserver> observer);
    void remove(const std::shared_ptr<EngineObserver> &observer);
    // The list as of now; later adds and removes do not change it.
    std::shared_ptr<const List> current() const;

private:
    mutable Mutex m_mutex;
    std::shared_ptr<const List> m_list GUARDED_BY(m_mutex); // the list itself is immutable
};

// Reports an observer's exception on stderr, the first few times.
// `message` is null for an exception not derived from std::exception.
void reportObserverThrew(const char *what, const char *message);

// Calls `call(observer)` for each observer in `list`. An observer that
// throws is a bug in it, not a reason to lose the request or the process.
template <typename Call> void notifyEach(const ObserverList::List &list, const char *what, Call &&call)
{
    for (const auto &o : list) {
        try {
            call(*o);
        } catch (const std::exception &e) {
            reportObserverThrew(what, e.what());
        } catch (...) {
            reportObserverThrew(what, nullptr);
        }
    }
}

// Calls a request's completion; a throwing completion (a caller bug) is
// reported and the engine keeps serving.
void complete(Completion &done, Response &&response);

} // namespace bp
