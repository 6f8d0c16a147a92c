#include "spin_wait.h"

#ifdef __linux__
#include <sys/prctl.h>
#endif

namespace bp {

void useFineTimerSlack()
{
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
#endif
}

bool spinUntil(TimePoint until, const std::atomic<std::uint64_t> &pokes, std::uint64_t seen)
{
    while (SteadyClock::now() < until) {
        if (pokes.load(std::memory_order_acquire) != seen)
            return true;
        cpuRelax();
    }
    return false;
}

} // namespace bp
