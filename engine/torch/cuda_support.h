// What the paged step needs from the device beyond tensors: free memory (to
// size the KV pool), staging buffers for the step's one upload and one
// download, a stream sync, and CUDA graphs. On a CUDA device each answer
// comes from the CUDA plugin (cuda_plugin.h), which resolveTorchDevice
// loaded; nothing here names a CUDA symbol, so the binaries link only
// libtorch_cpu and libc10.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>

namespace bp {

// Free memory on `device`: CUDA, the device's (after handing libtorch's
// cached blocks back); CPU, the host's MemAvailable. A CPU KV pool takes at
// most kCpuKvCap of it unless BATCHPILOT_CPU_KV_SPACE says otherwise
// (kv_pool.h; vLLM's CPU backend reserves 4 GiB: VLLM_CPU_KVCACHE_SPACE).
constexpr std::int64_t kCpuKvCap = std::int64_t(4) << 30;
std::int64_t freeDeviceMemory(const at::Device &device);
// What a model's weights may take: the same, uncapped.
std::int64_t availableDeviceMemory(const at::Device &device);
// A generator on `device` seeded with `seed` (random weights drawn where they live).
at::Generator deviceGenerator(const at::Device &device, std::uint64_t seed);
std::int64_t totalDeviceMemory(const at::Device &device);
// Bytes libtorch's allocator holds on a CUDA device (0 on the CPU).
std::int64_t reservedDeviceMemory(const at::Device &device);
// The most bytes tensors held on a CUDA device since the last reset (its
// allocator's high-water mark; 0 on the CPU), and the reset.
std::int64_t peakAllocatedDeviceMemory(const at::Device &device);
void resetPeakDeviceMemory(const at::Device &device);

// A host tensor for a copy to or from `device`: page-locked when the device
// is CUDA (so the copy is one DMA and can be asynchronous), plain otherwise.
at::Tensor stagingTensor(std::int64_t elements, at::ScalarType type, const at::Device &device);
// Waits for the work queued on `device`'s current stream (nothing on the CPU).
void synchronize(const at::Device &device);

// CUDA graphs captured by key (the decode step's batch-size bucket), sharing
// one memory pool and one capture stream. capture() runs `body` twice on
// that stream to warm it up, then captures a third run; `body` reads inputs
// from buffers the caller owns and returns the output, which stays valid
// (and is rewritten by each replay). Replays must not overlap (the caller
// serialises them). Throws on a failed capture, after ending it: the stream
// is out of capture mode and eager work runs on (failNextGraphCapture() in
// cuda_plugin.h forces such a failure, for tests).
class CudaGraphs {
public:
    explicit CudaGraphs(const at::Device &device);
    ~CudaGraphs();
    CudaGraphs(const CudaGraphs &) = delete;
    CudaGraphs &operator=(const CudaGraphs &) = delete;

    void capture(int key, const std::function<at::Tensor()> &body);
    bool has(int key) const;
    // Replays graph `key` on the current stream and returns its output.
    const at::Tensor &replay(int key);
    std::size_t size() const;

private:
    struct Impl;
    std::unique_ptr<Impl> m;
};

// Whether CUDA graphs can be captured here (a CUDA device, the plugin loaded).
bool cudaGraphsAvailable(const at::Device &device);

} // namespace bp
