// Platform code for the scheduling thread's short waits (EngineOptions::spin
// explains why it spins at all: a timed sleep here overshoots by ~50 µs at
// p50, docs/benchmarks.md).
#pragma once

#include "clock.h"

#include <atomic>
#include <cstdint>

namespace bp {

// Asks the kernel for 1 ns timer slack on the calling thread (Linux; a no-op
// elsewhere): the default 50 µs would stretch every queue delay.
void useFineTimerSlack();

// Busy-waits (with the CPU's pause hint) until the steady clock passes
// `until` or `pokes` moves away from `seen`. True when it moved (news).
bool spinUntil(TimePoint until, const std::atomic<std::uint64_t> &pokes, std::uint64_t seen);

// The CPU's pause hint for one turn of a busy-wait loop.
inline void cpuRelax()
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

} // namespace bp
