#include "work_pool.h"
#include "spin_wait.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace bp {

namespace {

// One call's chunks. Shared with the workers by shared_ptr: a worker that
// wakes after the call returned still holds valid counters, finds no chunk
// left and never calls fn (which lived on the caller's stack).
struct Job {
    const std::function<void(std::int64_t, std::int64_t)> *fn = nullptr;
    std::int64_t n = 0, chunk = 1, chunks = 0;
    std::atomic<std::int64_t> next{0}; // the next chunk to take
    std::atomic<std::int64_t> done{0}; // chunks that ran
    std::atomic<int> threads{0};       // threads that took a chunk
    std::mutex errorMutex;
    std::exception_ptr error;
};

thread_local bool t_inChunk = false;
thread_local int t_lastThreads = 0;

// Takes and runs chunks until none is left; returns whether it ran any.
bool takeChunks(Job &job)
{
    bool ran = false;
    t_inChunk = true;
    for (;;) {
        const std::int64_t c = job.next.fetch_add(1, std::memory_order_relaxed);
        if (c >= job.chunks)
            break;
        if (!ran)
            job.threads.fetch_add(1, std::memory_order_relaxed); // before its done: the caller sees it
        ran = true;
        const std::int64_t begin = c * job.chunk;
        try {
            (*job.fn)(begin, std::min(job.n, begin + job.chunk));
        } catch (...) {
            std::lock_guard<std::mutex> lock(job.errorMutex);
            if (!job.error)
                job.error = std::current_exception();
        }
        job.done.fetch_add(1, std::memory_order_release);
    }
    t_inChunk = false;
    return ran;
}

// Workers spin this many pauses (some tens of microseconds) for the next job
// before they sleep: a decode step posts one every few microseconds, and a
// sleeping worker costs a futex wake-up the caller does not wait for anyway.
// Longer spins (4,000 pauses, ~0.5 ms) were not faster on a quiet machine and
// take a core from ATen's own OpenMP threads and MKL's between the kernels.
constexpr int kSpinPauses = 300;

class Pool {
public:
    // Leaked on purpose: detached workers may still be asleep on its
    // condition variable when static destructors run.
    static Pool &instance()
    {
        static Pool *pool = new Pool;
        return *pool;
    }

    void post(const std::shared_ptr<Job> &job, int workers)
    {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            while (m_started < workers) {
                std::thread(&Pool::loop, this, m_started).detach();
                ++m_started;
            }
            m_job = job;
            m_wanted = workers;
            m_generation.store(m_generation.load(std::memory_order_relaxed) + 1, std::memory_order_release);
        }
        m_wake.notify_all();
    }

private:
    void loop(int index)
    {
        std::uint64_t seen = 0;
        for (;;) {
            for (int i = 0; i < kSpinPauses && m_generation.load(std::memory_order_acquire) == seen; ++i)
                cpuRelax();
            std::shared_ptr<Job> job;
            {
                std::unique_lock<std::mutex> lock(m_mutex);
                m_wake.wait(lock, [&] { return m_generation.load(std::memory_order_relaxed) != seen; });
                seen = m_generation.load(std::memory_order_relaxed);
                if (index < m_wanted)
                    job = m_job;
            }
            if (job)
                takeChunks(*job);
        }
    }

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::atomic<std::uint64_t> m_generation{0};
    std::shared_ptr<Job> m_job;
    int m_wanted = 0;
    int m_started = 0;
};

} // namespace

void parallelChunks(std::int64_t n, std::int64_t grain, int threads,
                    const std::function<void(std::int64_t, std::int64_t)> &fn)
{
    if (n <= 0)
        return;
    grain = std::max<std::int64_t>(1, grain);
    if (n <= grain || threads <= 1 || t_inChunk) {
        fn(0, n);
        t_lastThreads = 1;
        return;
    }
    auto job = std::make_shared<Job>();
    job->fn = &fn;
    job->n = n;
    // A few chunks per thread, so that the threads that run share what a
    // descheduled one would have done.
    job->chunks = std::min<std::int64_t>((n + grain - 1) / grain, std::int64_t(threads) * 4);
    job->chunk = (n + job->chunks - 1) / job->chunks;
    job->chunks = (n + job->chunk - 1) / job->chunk;
    Pool::instance().post(job, std::min<std::int64_t>(threads - 1, job->chunks - 1));
    takeChunks(*job);
    // Only chunks already taken are outstanding: their threads are running.
    for (int spins = 0; job->done.load(std::memory_order_acquire) < job->chunks; ++spins) {
        if (spins < kSpinPauses)
            cpuRelax();
        else
            std::this_thread::yield();
    }
    t_lastThreads = job->threads.load(std::memory_order_relaxed);
    if (job->error)
        std::rethrow_exception(job->error);
}

int lastChunkThreads()
{
    return t_lastThreads;
}

} // namespace bp
