#include "nvml_sampler.h"

#include <dlfcn.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace bp::app {

namespace {
// The subset of nvml.h we use, as plain C types with NVML's layouts.
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
using nvmlDevice_t = void *;
struct nvmlUtilization_t {
    unsigned int gpu;
    unsigned int memory;
};
struct nvmlMemory_t {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
};
constexpr unsigned kNameLength = 96; // NVML_DEVICE_NAME_V2_BUFFER_SIZE
} // namespace

struct NvmlSampler::Api {
    nvmlReturn_t (*init)() = nullptr;
    nvmlReturn_t (*shutdown)() = nullptr;
    nvmlReturn_t (*deviceCount)(unsigned int *) = nullptr;
    nvmlReturn_t (*handleByIndex)(unsigned int, nvmlDevice_t *) = nullptr;
    nvmlReturn_t (*utilization)(nvmlDevice_t, nvmlUtilization_t *) = nullptr;
    nvmlReturn_t (*memoryInfo)(nvmlDevice_t, nvmlMemory_t *) = nullptr;
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int) = nullptr;
    const char *(*errorString)(nvmlReturn_t) = nullptr; // optional
};

namespace {
template <typename F> bool resolve(void *library, const char *symbol, F &out)
{
    out = reinterpret_cast<F>(dlsym(library, symbol));
    return out != nullptr;
}
} // namespace

NvmlSampler::NvmlSampler(std::string libraryPath, unsigned deviceIndex)
    : m_api(std::make_unique<Api>()), m_deviceIndex(deviceIndex)
{
    m_library = dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!m_library) {
        const char *why = dlerror();
        m_error = why ? why : libraryPath + ": cannot be loaded";
        return;
    }
    Api &a = *m_api;
    const char *missing = nullptr;
    if (!resolve(m_library, "nvmlInit_v2", a.init))
        missing = "nvmlInit_v2";
    else if (!resolve(m_library, "nvmlShutdown", a.shutdown))
        missing = "nvmlShutdown";
    else if (!resolve(m_library, "nvmlDeviceGetCount_v2", a.deviceCount))
        missing = "nvmlDeviceGetCount_v2";
    else if (!resolve(m_library, "nvmlDeviceGetHandleByIndex_v2", a.handleByIndex))
        missing = "nvmlDeviceGetHandleByIndex_v2";
    else if (!resolve(m_library, "nvmlDeviceGetUtilizationRates", a.utilization))
        missing = "nvmlDeviceGetUtilizationRates";
    else if (!resolve(m_library, "nvmlDeviceGetMemoryInfo", a.memoryInfo))
        missing = "nvmlDeviceGetMemoryInfo";
    else if (!resolve(m_library, "nvmlDeviceGetName", a.name))
        missing = "nvmlDeviceGetName";
    resolve(m_library, "nvmlErrorString", a.errorString);
    if (missing) {
        m_error = libraryPath + " has no symbol " + missing + " (not an NVML library?)";
        return;
    }
    if (nvmlReturn_t r = a.init(); r != kNvmlSuccess) {
        m_error = describe("nvmlInit_v2", r);
        return;
    }
    m_initialised = true;
    if (nvmlReturn_t r = a.deviceCount(&m_deviceCount); r != kNvmlSuccess) {
        m_error = describe("nvmlDeviceGetCount_v2", r);
        return;
    }
    if (m_deviceCount == 0) {
        m_error = "no NVIDIA GPU found";
        return;
    }
    if (deviceIndex >= m_deviceCount) {
        m_error = "GPU " + std::to_string(deviceIndex) + " does not exist (" + std::to_string(m_deviceCount) +
                  " found)";
        return;
    }
    nvmlDevice_t device = nullptr;
    if (nvmlReturn_t r = a.handleByIndex(deviceIndex, &device); r != kNvmlSuccess || !device) {
        m_error = describe("nvmlDeviceGetHandleByIndex_v2", r);
        return;
    }
    char name[kNameLength] = {};
    if (a.name(device, name, kNameLength) == kNvmlSuccess)
        m_deviceName.assign(name, strnlen(name, kNameLength));
    m_device = device;
}

NvmlSampler::~NvmlSampler()
{
    if (m_initialised)
        m_api->shutdown();
    if (m_library)
        dlclose(m_library);
}

std::string NvmlSampler::describe(const char *call, int code) const
{
    std::string s = std::string(call) + " failed with NVML error " + std::to_string(code);
    if (m_api->errorString)
        if (const char *text = m_api->errorString(code))
            s += std::string(" (") + text + ")";
    return s;
}

Result<GpuSample> NvmlSampler::sample() const
{
    if (!m_device)
        return Status(StatusCode::Unavailable, m_error);
    nvmlUtilization_t util{};
    if (nvmlReturn_t r = m_api->utilization(m_device, &util); r != kNvmlSuccess)
        return Status(StatusCode::Unavailable, describe("nvmlDeviceGetUtilizationRates", r));
    nvmlMemory_t memory{};
    if (nvmlReturn_t r = m_api->memoryInfo(m_device, &memory); r != kNvmlSuccess)
        return Status(StatusCode::Unavailable, describe("nvmlDeviceGetMemoryInfo", r));
    GpuSample out;
    out.gpuUtilPercent = util.gpu;
    out.memoryUtilPercent = util.memory;
    out.memoryUsedBytes = memory.used;
    out.memoryTotalBytes = memory.total;
    return out;
}

unsigned NvmlSampler::deviceIndexFor(const std::string &device)
{
    constexpr std::string_view prefix = "cuda:";
    if (device.size() <= prefix.size() || device.compare(0, prefix.size(), prefix) != 0)
        return 0;
    unsigned index = 0;
    const char *first = device.data() + prefix.size(), *last = device.data() + device.size();
    auto [end, ec] = std::from_chars(first, last, index);
    return ec == std::errc() && end == last ? index : 0;
}

std::string NvmlSampler::libraryFromEnvironment()
{
    const char *path = std::getenv("BATCHPILOT_NVML_LIBRARY");
    return path ? std::string(path) : std::string(kDefaultLibrary);
}

} // namespace bp::app
