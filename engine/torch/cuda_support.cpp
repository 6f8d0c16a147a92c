#include "cuda_support.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>

#ifdef BATCHPILOT_TORCH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

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

} // namespace

std::int64_t freeDeviceMemory(const at::Device &device)
{
#ifdef BATCHPILOT_TORCH_CUDA
    if (device.is_cuda()) {
        const c10::cuda::CUDAGuard guard(device);
        c10::cuda::CUDACachingAllocator::emptyCache();
        std::size_t free = 0, total = 0;
        C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
        return std::int64_t(free);
    }
#endif
    (void)device;
    return std::min(hostMeminfo("MemAvailable"), kCpuKvCap);
}

std::int64_t availableDeviceMemory(const at::Device &device)
{
    if (device.is_cuda())
        return freeDeviceMemory(device);
    return hostMeminfo("MemAvailable");
}

at::Generator deviceGenerator(const at::Device &device, std::uint64_t seed)
{
#ifdef BATCHPILOT_TORCH_CUDA
    if (device.is_cuda()) {
        at::Generator g = at::cuda::detail::createCUDAGenerator(device.index());
        g.set_current_seed(seed);
        return g;
    }
#endif
    (void)device;
    return at::detail::createCPUGenerator(seed);
}

std::int64_t totalDeviceMemory(const at::Device &device)
{
#ifdef BATCHPILOT_TORCH_CUDA
    if (device.is_cuda()) {
        const c10::cuda::CUDAGuard guard(device);
        std::size_t free = 0, total = 0;
        C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
        return std::int64_t(total);
    }
#endif
    (void)device;
    return hostMeminfo("MemTotal");
}

std::int64_t reservedDeviceMemory(const at::Device &device)
{
#ifdef BATCHPILOT_TORCH_CUDA
    if (device.is_cuda())
        return std::int64_t(c10::cuda::CUDACachingAllocator::getDeviceStats(device.index())
                                .reserved_bytes[0]
                                .current);
#endif
    (void)device;
    return 0;
}

at::Tensor stagingTensor(std::int64_t elements, at::ScalarType type, const at::Device &device)
{
    return at::empty({elements}, at::TensorOptions().dtype(type).pinned_memory(device.is_cuda()));
}

void synchronize(const at::Device &device)
{
#ifdef BATCHPILOT_TORCH_CUDA
    if (device.is_cuda())
        c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
#endif
    (void)device;
}

bool cudaGraphsAvailable(const at::Device &device)
{
#ifdef BATCHPILOT_TORCH_CUDA
    return device.is_cuda();
#else
    (void)device;
    return false;
#endif
}

#ifdef BATCHPILOT_TORCH_CUDA
struct CudaGraphs::Impl {
    at::Device device;
    std::map<int, std::unique_ptr<at::cuda::CUDAGraph>> graphs;
    std::map<int, at::Tensor> outputs;
    at::cuda::MempoolId_t pool{0, 0};
};

CudaGraphs::CudaGraphs(const at::Device &device) : m(std::make_unique<Impl>(Impl{device, {}, {}, {0, 0}})) {}

CudaGraphs::~CudaGraphs() = default;

void CudaGraphs::capture(int key, const std::function<at::Tensor()> &body)
{
    const c10::cuda::CUDAGuard guard(m->device);
    // Whatever the caller queued (its buffers' contents) is done before the
    // side stream starts.
    c10::cuda::getCurrentCUDAStream(m->device.index()).synchronize();
    c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool(false, m->device.index());
    const c10::cuda::CUDAStreamGuard streamGuard(side);
    body();
    body();
    side.synchronize();
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    if (m->graphs.empty())
        m->pool = at::cuda::graph_pool_handle();
    graph->capture_begin(m->pool);
    at::Tensor out = body();
    graph->capture_end();
    side.synchronize();
    m->graphs[key] = std::move(graph);
    m->outputs[key] = out;
}

bool CudaGraphs::has(int key) const
{
    return m->graphs.count(key) > 0;
}

const at::Tensor &CudaGraphs::replay(int key)
{
    m->graphs.at(key)->replay();
    return m->outputs.at(key);
}

std::size_t CudaGraphs::size() const
{
    return m->graphs.size();
}
#else
struct CudaGraphs::Impl {};
CudaGraphs::CudaGraphs(const at::Device &) : m(std::make_unique<Impl>()) {}
CudaGraphs::~CudaGraphs() = default;
void CudaGraphs::capture(int, const std::function<at::Tensor()> &)
{
    throw std::runtime_error("CUDA graphs need a CUDA build of libtorch");
}
bool CudaGraphs::has(int) const
{
    return false;
}
const at::Tensor &CudaGraphs::replay(int)
{
    throw std::runtime_error("CUDA graphs need a CUDA build of libtorch");
}
std::size_t CudaGraphs::size() const
{
    return 0;
}
#endif

} // namespace bp
