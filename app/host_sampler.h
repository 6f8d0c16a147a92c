// What the machine is doing besides the engine's own figures: GPU
// utilization from NVML when an NVIDIA GPU is there, else the process's CPU
// use. EngineBridge samples it on its poller thread next to each snapshot,
// so the GUI thread never calls into NVML. Qt-free.
#pragma once

#include "nvml_sampler.h"
#include "process_cpu_sampler.h"

#include <memory>
#include <optional>
#include <string>

namespace bp::app {

struct HostSample {
    double processCpuPercent = 0; // of all cores (ProcessCpuSampler)
    int cores = 1;
    std::optional<GpuSample> gpu; // set when NVML works
    std::string gpuName;          // NVML's device name, when available
    std::string gpuUnavailable;   // why there is no GPU sample (shown in the chart's title)
};

class HostSampler {
public:
    // `nvmlLibrary` empty: do not try NVML at all.
    HostSampler(const std::string &nvmlLibrary, unsigned gpuIndex);
    HostSample sample();
    bool hasGpu() const { return m_nvml && m_nvml->available(); }

private:
    ProcessCpuSampler m_cpu;
    std::unique_ptr<NvmlSampler> m_nvml;
};

} // namespace bp::app
