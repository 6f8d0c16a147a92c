#include "host_sampler.h"

namespace bp::app {

HostSampler::HostSampler(const std::string &nvmlLibrary, unsigned gpuIndex)
{
    if (!nvmlLibrary.empty())
        m_nvml = std::make_unique<NvmlSampler>(nvmlLibrary, gpuIndex);
}

HostSample HostSampler::sample()
{
    HostSample out;
    out.processCpuPercent = m_cpu.sample();
    out.cores = m_cpu.cores();
    if (!m_nvml) {
        out.gpuUnavailable = "NVML not loaded";
        return out;
    }
    out.gpuName = m_nvml->deviceName();
    auto gpu = m_nvml->sample();
    if (gpu)
        out.gpu = *gpu;
    else
        out.gpuUnavailable = gpu.status().message();
    return out;
}

} // namespace bp::app
