#include "process_cpu_sampler.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

namespace bp::app {

namespace {
Duration toDuration(const timeval &tv)
{
    return std::chrono::seconds(tv.tv_sec) + std::chrono::microseconds(tv.tv_usec);
}

int onlineCores()
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? int(n) : 1;
}
} // namespace

ProcessCpuSampler::ProcessCpuSampler()
    : m_cores(onlineCores()), m_lastWall(SteadyClock::now()), m_lastCpu(processCpuTime())
{
}

Duration ProcessCpuSampler::processCpuTime()
{
    rusage usage{};
    if (getrusage(RUSAGE_SELF, &usage) != 0)
        return Duration::zero();
    return toDuration(usage.ru_utime) + toDuration(usage.ru_stime);
}

double ProcessCpuSampler::sample()
{
    const TimePoint wall = SteadyClock::now();
    const Duration cpu = processCpuTime();
    const double wallS = toSeconds(wall - m_lastWall);
    const double cpuS = toSeconds(cpu - m_lastCpu);
    m_lastWall = wall;
    m_lastCpu = cpu;
    if (wallS <= 0)
        return 0;
    return std::clamp(100.0 * cpuS / (wallS * m_cores), 0.0, 100.0);
}

} // namespace bp::app
