// GPU utilization from NVML, loaded at run time with dlopen: the console has
// no link-time dependency on the NVIDIA driver, runs unchanged on machines
// without one, and the tests drive the same code through a fake library
// with the same symbols (tests/ui/fake_nvml.c).
//
// Qt-free. Not thread-safe: one thread owns a sampler (EngineBridge samples
// on its poller thread). Constructing one loads and initialises NVML; the
// destructor shuts it down and unloads the library.
#pragma once

#include "engine/core/result.h"

#include <cstdint>
#include <memory>
#include <string>

namespace bp::app {

struct GpuSample {
    unsigned gpuUtilPercent = 0;    // time a kernel was running, over NVML's last sample period
    unsigned memoryUtilPercent = 0; // time device memory was read or written (bandwidth use)
    std::uint64_t memoryUsedBytes = 0;
    std::uint64_t memoryTotalBytes = 0;
};

class NvmlSampler {
public:
    static constexpr const char *kDefaultLibrary = "libnvidia-ml.so.1";

    // Loads `libraryPath` (a soname searched the usual way, or a path) and
    // opens device `deviceIndex`. Never fails loudly: available() says
    // whether sampling works and error() why not ("libnvidia-ml.so.1: cannot
    // open shared object file", "no NVIDIA GPU found", ...).
    explicit NvmlSampler(std::string libraryPath = kDefaultLibrary, unsigned deviceIndex = 0);
    ~NvmlSampler();
    NvmlSampler(const NvmlSampler &) = delete;
    NvmlSampler &operator=(const NvmlSampler &) = delete;

    bool available() const { return m_device != nullptr; }
    const std::string &error() const { return m_error; }
    const std::string &deviceName() const { return m_deviceName; }
    unsigned deviceCount() const { return m_deviceCount; }
    unsigned deviceIndex() const { return m_deviceIndex; }

    // Unavailable when the sampler is not available or NVML reports an error
    // (with NVML's code and, when the library has it, its message).
    Result<GpuSample> sample() const;

    // "cuda:2" -> 2; "cuda", "auto", "cpu" and anything else -> 0.
    static unsigned deviceIndexFor(const std::string &device);
    // The library to load: $BATCHPILOT_NVML_LIBRARY when set (the tests
    // point it at their fake; set but empty: none, do not try NVML), else
    // kDefaultLibrary.
    static std::string libraryFromEnvironment();

private:
    struct Api; // resolved entry points
    std::string describe(const char *call, int code) const;

    void *m_library = nullptr;
    std::unique_ptr<Api> m_api;
    bool m_initialised = false;
    void *m_device = nullptr; // nvmlDevice_t
    unsigned m_deviceCount = 0;
    unsigned m_deviceIndex = 0;
    std::string m_deviceName;
    std::string m_error;
};

} // namespace bp::app
