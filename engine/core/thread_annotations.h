// The lock discipline, stated so that a tool checks it: clang's thread
// safety analysis (-Wthread-safety, the `thread-safety` preset, run by CI)
// proves at compile time that every member marked GUARDED_BY(m) is touched
// only with m held, and that a function marked REQUIRES(m) is only called
// with it held. With GCC the annotations compile to nothing.
//
// The analysis needs an annotated mutex type: Mutex and MutexLock below
// wrap std::mutex (libstdc++'s own types carry no annotations). Condition
// variables wait on a MutexLock through std::condition_variable_any.
#pragma once

#include <mutex>

#if defined(__clang__)
#define BP_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define BP_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) BP_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY BP_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) BP_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) BP_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) BP_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define ACQUIRE(...) BP_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) BP_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) BP_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) BP_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RETURN_CAPABILITY(x) BP_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS BP_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace bp {

class CAPABILITY("mutex") Mutex {
public:
    void lock() ACQUIRE() { m_mutex.lock(); }
    void unlock() RELEASE() { m_mutex.unlock(); }
    bool try_lock() TRY_ACQUIRE(true) { return m_mutex.try_lock(); }

private:
    std::mutex m_mutex;
};

// A scoped lock the analysis follows, also through unlock()/lock() in the
// middle of a scope (a leader releases the lock to complete requests).
// BasicLockable, so std::condition_variable_any can wait on it.
class SCOPED_CAPABILITY MutexLock {
public:
    explicit MutexLock(Mutex &mutex) ACQUIRE(mutex) : m_mutex(mutex) { m_mutex.lock(); }
    ~MutexLock() RELEASE()
    {
        if (m_locked)
            m_mutex.unlock();
    }
    MutexLock(const MutexLock &) = delete;
    MutexLock &operator=(const MutexLock &) = delete;

    void lock() ACQUIRE()
    {
        m_mutex.lock();
        m_locked = true;
    }
    void unlock() RELEASE()
    {
        m_locked = false;
        m_mutex.unlock();
    }

private:
    Mutex &m_mutex;
    bool m_locked = true;
};

} // namespace bp
