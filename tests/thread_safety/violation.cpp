// Must NOT compile under clang -Wthread-safety -Werror (the
// `thread_safety_catches` test): a guarded member written without its lock.
#include "engine/core/thread_annotations.h"

namespace {
class Counter {
public:
    void bump() { ++m_count; } // no MutexLock: the analysis refuses it

private:
    bp::Mutex m_mutex;
    int m_count GUARDED_BY(m_mutex) = 0;
};
} // namespace

int main()
{
    Counter c;
    c.bump();
}
