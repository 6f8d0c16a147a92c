// libbatchpilot_cuda.so: the CUDA half of the torch backends, loaded by
// cuda_plugin_loader.cpp only when a CUDA device is asked for. It carries
// the CUDA kernels of the batchpilot:: ops (registered with the dispatcher
// when the library loads) and the table of cuda_plugin_api.h.
#include "cuda_plugin_api.h"

#include "../kernels/paged_attention_checks.h"
#include "../kernels/paged_attention_cuda.h"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/headeronly/version.h>
#include <torch/library.h>

#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace bp {

namespace {

int fail(char *err, std::size_t size, const std::string &what)
{
    if (err && size > 0)
        std::snprintf(err, size, "%s", what.c_str());
    return 1;
}

std::string firstLine(const std::exception &e)
{
    std::string what = e.what();
    if (const auto *c10error = dynamic_cast<const c10::Error *>(&e))
        what = c10error->what_without_backtrace();
    if (const auto eol = what.find('\n'); eol != std::string::npos)
        what.resize(eol);
    return what;
}

kernels::Element elementOf(const at::Tensor &t)
{
    switch (t.scalar_type()) {
    case at::kFloat: return kernels::Element::Float32;
    case at::kBFloat16: return kernels::Element::BFloat16;
    case at::kHalf: return kernels::Element::Float16;
    default: TORCH_CHECK(false, "paged attention: unsupported dtype ", t.scalar_type());
    }
}

void writeKvCuda(at::Tensor &kPool, at::Tensor &vPool, const at::Tensor &k, const at::Tensor &v,
                 const at::Tensor &slots)
{
    checkWriteKv(kPool, vPool, k, v, slots);
    const c10::cuda::CUDAGuard guard(kPool.device());
    kernels::WriteKvArgs a;
    a.k = k.data_ptr();
    a.kRowStride = k.stride(0);
    a.v = v.data_ptr();
    a.vRowStride = v.stride(0);
    a.kPool = kPool.data_ptr();
    a.vPool = vPool.data_ptr();
    a.slots = slots.data_ptr<std::int32_t>();
    a.tokens = k.size(0);
    a.kvHeads = int(kPool.size(0));
    a.blocks = kPool.size(1);
    a.blockTokens = int(kPool.size(2));
    a.headDim = int(kPool.size(3));
    kernels::launchWriteKv(a, elementOf(k), c10::cuda::getCurrentCUDAStream(kPool.device().index()).stream());
}

at::Tensor pagedAttentionCuda(const at::Tensor &q, const at::Tensor &kPool, const at::Tensor &vPool,
                              const at::Tensor &blockTables, const at::Tensor &querySeq,
                              const at::Tensor &positions, std::int64_t blockTokens, double scale,
                              std::int64_t window)
{
    checkAttention(q, kPool, vPool, blockTables, querySeq, positions, blockTokens);
    // A sliding window (Gemma 3's local layers) is the CPU kernel's alone so
    // far; the loader refuses such a model on CUDA before this is reached.
    TORCH_CHECK(window == 0, "paged_attention: the CUDA kernel has no sliding window (window ", window,
                "); run the model on the CPU");
    const std::string problem = kernels::headDimProblem(int(q.size(2)), true);
    TORCH_CHECK(problem.empty(), "paged_attention: ", problem);
    const c10::cuda::CUDAGuard guard(q.device());
    at::Tensor out = at::empty({q.size(0), q.size(1), q.size(2)}, q.options());
    kernels::AttentionArgs a;
    a.q = q.data_ptr();
    a.qRowStride = q.stride(0);
    a.kPool = kPool.data_ptr();
    a.vPool = vPool.data_ptr();
    a.blockTables = blockTables.data_ptr<std::int32_t>();
    a.tableStride = blockTables.size(1);
    a.querySeq = querySeq.data_ptr<std::int32_t>();
    a.positions = positions.data_ptr<std::int32_t>();
    a.out = out.data_ptr();
    a.tokens = q.size(0);
    a.heads = int(q.size(1));
    a.kvHeads = int(kPool.size(0));
    a.blocks = kPool.size(1);
    a.headDim = int(q.size(2));
    a.blockTokens = int(blockTokens);
    a.scale = float(scale);
    kernels::launchPagedAttention(a, elementOf(q),
                                  c10::cuda::getCurrentCUDAStream(q.device().index()).stream());
    return out;
}

// --- the table ------------------------------------------------------------------

int deviceCount(char *err, std::size_t size)
{
    int count = 0;
    const cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess) {
        (void)cudaGetLastError(); // clear the sticky-free error for later calls
        return -fail(err, size,
                     std::string("the CUDA driver or runtime (libcudart) cannot start: ") +
                         cudaGetErrorString(rc) + " (" + cudaGetErrorName(rc) + ")");
    }
    if (count == 0)
        return -fail(err, size, "the CUDA runtime sees no GPU");
    return count;
}

int memoryInfo(int device, int emptyCache, std::int64_t *freeBytes, std::int64_t *totalBytes, char *err,
               std::size_t size)
{
    try {
        const c10::cuda::CUDAGuard guard{c10::DeviceIndex(device)};
        if (emptyCache)
            c10::cuda::CUDACachingAllocator::emptyCache();
        std::size_t free = 0, total = 0;
        C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
        *freeBytes = std::int64_t(free);
        *totalBytes = std::int64_t(total);
        return 0;
    } catch (const std::exception &e) {
        return fail(err, size, firstLine(e));
    }
}

std::int64_t reservedBytes(int device)
{
    return std::int64_t(
        c10::cuda::CUDACachingAllocator::getDeviceStats(c10::DeviceIndex(device)).reserved_bytes[0].current);
}

std::int64_t peakAllocatedBytes(int device)
{
    return std::int64_t(
        c10::cuda::CUDACachingAllocator::getDeviceStats(c10::DeviceIndex(device)).allocated_bytes[0].peak);
}

void resetPeak(int device)
{
    c10::cuda::CUDACachingAllocator::resetPeakStats(c10::DeviceIndex(device));
}

int synchronize(int device, char *err, std::size_t size)
{
    try {
        c10::cuda::getCurrentCUDAStream(c10::DeviceIndex(device)).synchronize();
        return 0;
    } catch (const std::exception &e) {
        return fail(err, size, firstLine(e));
    }
}

struct Graphs {
    c10::DeviceIndex device;
    // One capture stream for every graph (a graph replays on whatever
    // stream is current; capturing each on a fresh pool stream bought
    // nothing and spread the warm-ups over 32 streams).
    c10::cuda::CUDAStream stream;
    std::map<int, std::unique_ptr<at::cuda::CUDAGraph>> graphs;
    std::optional<at::cuda::MempoolId_t> pool;
};

void *graphsCreate(int device, char *err, std::size_t size)
{
    try {
        const c10::cuda::CUDAGuard guard{c10::DeviceIndex(device)};
        return new Graphs{c10::DeviceIndex(device),
                          c10::cuda::getStreamFromPool(false, c10::DeviceIndex(device)),
                          {},
                          std::nullopt};
    } catch (const std::exception &e) {
        fail(err, size, firstLine(e));
        return nullptr;
    }
}

void graphsDestroy(void *graphs)
{
    delete static_cast<Graphs *>(graphs);
}

// Ends a capture that failed part-way: the allocator stops routing this
// stream's allocations to the graph pool (capture_end), and if CUDA still
// has the stream in capture mode (capture_end threw before ending it), the
// capture is ended by hand and its graph dropped.
void abandonCapture(at::cuda::CUDAGraph &graph, cudaStream_t stream)
{
    try {
        graph.capture_end();
    } catch (const std::exception &) {
        // expected: the capture was invalidated
    }
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
        cudaGraph_t partial = nullptr;
        if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial)
            cudaGraphDestroy(partial);
    }
    (void)cudaGetLastError();
}

int graphsCapture(void *handle, int key, BpCudaGraphBody body, void *context, int failInside, char *err,
                  std::size_t size)
{
    auto &g = *static_cast<Graphs *>(handle);
    std::unique_ptr<at::cuda::CUDAGraph> graph;
    bool capturing = false;
    try {
        const c10::cuda::CUDAGuard guard(g.device);
        // What the caller queued (its buffers' contents) is done before the
        // capture stream starts.
        c10::cuda::getCurrentCUDAStream(g.device).synchronize();
        const c10::cuda::CUDAStreamGuard streamGuard(g.stream);
        for (int warm = 0; warm < 2; ++warm)
            if (body(context, err, size) != 0)
                return 1;
        g.stream.synchronize();
        graph = std::make_unique<at::cuda::CUDAGraph>();
        if (!g.pool)
            g.pool = at::cuda::graph_pool_handle();
        graph->capture_begin(*g.pool);
        capturing = true;
        if (failInside)
            throw std::runtime_error("capture failed on purpose (test hook)");
        if (body(context, err, size) != 0) {
            abandonCapture(*graph, g.stream.stream());
            return 1;
        }
        capturing = false;
        graph->capture_end();
        g.stream.synchronize();
        g.graphs[key] = std::move(graph);
        return 0;
    } catch (const std::exception &e) {
        if (capturing && graph)
            abandonCapture(*graph, g.stream.stream());
        return fail(err, size, firstLine(e));
    }
}

int graphsReplay(void *handle, int key, char *err, std::size_t size)
{
    auto &g = *static_cast<Graphs *>(handle);
    try {
        const auto it = g.graphs.find(key);
        if (it == g.graphs.end())
            return fail(err, size, "no CUDA graph captured for batch " + std::to_string(key));
        it->second->replay();
        return 0;
    } catch (const std::exception &e) {
        return fail(err, size, firstLine(e));
    }
}

const BpCudaPluginApi kApi = {
    BATCHPILOT_CUDA_PLUGIN_ABI,
    sizeof(BpCudaPluginApi),
    TORCH_VERSION,
    &deviceCount,
    &memoryInfo,
    &reservedBytes,
    &peakAllocatedBytes,
    &resetPeak,
    &synchronize,
    &graphsCreate,
    &graphsDestroy,
    &graphsCapture,
    &graphsReplay,
};

} // namespace

TORCH_LIBRARY_IMPL(batchpilot, CUDA, m)
{
    m.impl("write_kv", &writeKvCuda);
    m.impl("paged_attention", &pagedAttentionCuda);
}

} // namespace bp

extern "C" __attribute__((visibility("default"))) const BpCudaPluginApi *batchpilot_cuda_plugin(uint32_t abi)
{
    return abi == BATCHPILOT_CUDA_PLUGIN_ABI ? &bp::kApi : nullptr;
}
