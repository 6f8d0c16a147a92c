// Must compile under clang -Wthread-safety -Werror (the `thread_safety_holds`
// test): the same member written with its lock, and a function that states
// it needs the lock called with it held.
#include "engine/core/thread_annotations.h"

namespace {
class Counter {
public:
    void bump()
    {
        bp::MutexLock lock(m_mutex);
        bumpLocked();
    }

private:
    void bumpLocked() REQUIRES(m_mutex) { ++m_count; }
    bp::Mutex m_mutex;
    int m_count GUARDED_BY(m_mutex) = 0;
};
} // namespace

int main()
{
    Counter c;
    c.bump();
}
