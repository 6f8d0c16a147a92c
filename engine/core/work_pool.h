// The CPU kernels' threads: a range split into chunks that the calling thread
// and the pool's workers take one at a time.
//
// Why not at::parallel_for: its OpenMP region gives each thread a fixed share
// and ends at a barrier every thread must reach. On a machine where another
// process wants a core (a build, the console's own GUI thread, a load
// generator) one of the team is often descheduled, and the whole step waits a
// scheduler slice for its share: with one busy process beside it, a batch-1
// decode step of docs/benchmarks.md's checkpoint took 10-13 ms instead of
// 2.6 ms. Here the threads that run take the chunks, and the caller waits only
// for chunks that were taken: a worker that wakes late finds none left.
//
// Torch-free and Qt-free (engine/core/), so ThreadSanitizer checks it in the
// engine-only build; its callers are the CPU kernels in engine/torch/.
#pragma once

#include <cstdint>
#include <functional>

namespace bp {

// Runs fn(begin, end) over [0, n) in chunks of at least `grain` items, on the
// calling thread and up to threads - 1 workers; returns when every chunk has
// run. n <= grain, threads <= 1, or a call from inside a chunk runs fn(0, n)
// here. An exception from fn is rethrown here (the first one; the other chunks
// still run).
void parallelChunks(std::int64_t n, std::int64_t grain, int threads,
                    const std::function<void(std::int64_t, std::int64_t)> &fn);

// How many distinct threads ran a chunk in the last parallelChunks() call made
// by this thread (for tests and diagnostics).
int lastChunkThreads();

} // namespace bp
