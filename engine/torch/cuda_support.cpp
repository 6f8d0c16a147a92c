#include "cuda_support.h"

#include "cuda_plugin.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

namespace bp {

namespace {

std::int64_t hostMeminfo(const std::string &key)
{
    std::ifstream in("/proc/meminfo");
    std::string name;
    std::int64_t kib = 0;
    std::string unit;
    while (in >> name >> kib >> unit)
        if (name == key + ":")
            return kib * 1024;
    return 0;
}

// The plugin's table for a CUDA device (a CUDA device exists only once
// resolveTorchDevice loaded it, so failing here is a caller's bug).
const BpCudaPluginApi &plugin()
{
    auto api = cudaPlugin();
    if (!api)
        throw std::runtime_error(api.status().message());
    return **api;
}

void check(int rc, const char *err)
{
    if (rc != 0)
        throw std::runtime_error(err);
}

struct MemInfo {
    std::int64_t free = 0, total = 0;
};

MemInfo cudaMemInfo(const at::Device &device, bool emptyCache)
{
    MemInfo m;
    char err[512] = {};
    check(plugin().memoryInfo(device.index(), emptyCache, &m.free, &m.total, err, sizeof err), err);
    return m;
}

} // namespace

std::int64_t freeDeviceMemory(const at::Device &device)
{
    if (device.is_cuda())
        return cudaMemInfo(device, true).free;
    return hostMeminfo("MemAvailable");
}

std::int64_t availableDeviceMemory(const at::Device &device)
{
    return freeDeviceMemory(device);
}

at::Generator deviceGenerator(const at::Device &device, std::uint64_t seed)
{
    if (device.is_cuda()) {
        // torch's CUDA hooks (registered by the plugin's libtorch_cuda) make it.
        at::Generator g = at::globalContext().defaultGenerator(device).clone();
        g.set_current_seed(seed);
        return g;
    }
    return at::detail::createCPUGenerator(seed);
}

std::int64_t totalDeviceMemory(const at::Device &device)
{
    if (device.is_cuda())
        return cudaMemInfo(device, false).total;
    return hostMeminfo("MemTotal");
}

std::int64_t reservedDeviceMemory(const at::Device &device)
{
    return device.is_cuda() ? plugin().reservedBytes(device.index()) : 0;
}

std::int64_t peakAllocatedDeviceMemory(const at::Device &device)
{
    return device.is_cuda() ? plugin().peakAllocatedBytes(device.index()) : 0;
}

void resetPeakDeviceMemory(const at::Device &device)
{
    if (device.is_cuda())
        plugin().resetPeak(device.index());
}

at::Tensor stagingTensor(std::int64_t elements, at::ScalarType type, const at::Device &device)
{
    return at::empty({elements}, at::TensorOptions().dtype(type).pinned_memory(device.is_cuda()));
}

void synchronize(const at::Device &device)
{
    if (!device.is_cuda())
        return;
    char err[512] = {};
    check(plugin().synchronize(device.index(), err, sizeof err), err);
}

bool cudaGraphsAvailable(const at::Device &device)
{
    return device.is_cuda() && cudaPluginLoaded();
}

struct CudaGraphs::Impl {
    const BpCudaPluginApi &api;
    void *graphs = nullptr;
    std::map<int, at::Tensor> outputs;
    ~Impl()
    {
        if (graphs)
            api.graphsDestroy(graphs);
    }
};

CudaGraphs::CudaGraphs(const at::Device &device) : m(std::make_unique<Impl>(Impl{plugin(), nullptr, {}}))
{
    char err[512] = {};
    m->graphs = m->api.graphsCreate(device.index(), err, sizeof err);
    if (!m->graphs)
        throw std::runtime_error(std::string("CUDA graphs: ") + err);
}

CudaGraphs::~CudaGraphs() = default;

namespace {

struct BodyContext {
    const std::function<at::Tensor()> *body;
    at::Tensor out;
};

int runBody(void *context, char *err, std::size_t size)
{
    auto &c = *static_cast<BodyContext *>(context);
    try {
        c.out = (*c.body)();
        return 0;
    } catch (const std::exception &e) {
        std::snprintf(err, size, "%s", e.what());
        return 1;
    }
}

} // namespace

void CudaGraphs::capture(int key, const std::function<at::Tensor()> &body)
{
    BodyContext context{&body, {}};
    char err[1024] = {};
    const bool fault = takeGraphCaptureFault();
    check(m->api.graphsCapture(m->graphs, key, &runBody, &context, fault, err, sizeof err), err);
    m->outputs[key] = context.out;
}

bool CudaGraphs::has(int key) const
{
    return m->outputs.count(key) > 0;
}

const at::Tensor &CudaGraphs::replay(int key)
{
    char err[512] = {};
    check(m->api.graphsReplay(m->graphs, key, err, sizeof err), err);
    return m->outputs.at(key);
}

std::size_t CudaGraphs::size() const
{
    return m->outputs.size();
}

} // namespace bp
