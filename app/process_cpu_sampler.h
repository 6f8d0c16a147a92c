// The process's own CPU use, for the console's utilization chart when there
// is no GPU to watch. Qt-free; one thread owns a sampler.
#pragma once

#include "engine/core/clock.h"

namespace bp::app {

class ProcessCpuSampler {
public:
    ProcessCpuSampler();

    // CPU time (user + system, every thread) this process used since the
    // previous call (or construction), as a percentage of all cores' time
    // over the same wall-clock interval: 100 = every core busy. 0 when no
    // time has passed.
    double sample();

    int cores() const { return m_cores; }
    // User + system CPU time of the whole process so far.
    static Duration processCpuTime();

private:
    const int m_cores;
    TimePoint m_lastWall;
    Duration m_lastCpu{};
};

} // namespace bp::app
