// The CUDA plugin's interface: what libbatchpilot_cuda.so (the CUDA half of
// the torch backends, engine/torch/cuda/) offers the binaries, which link
// only libtorch_cpu and libc10. Torch-free and C-linkage, so that the one
// entry point is found with dlsym and a plugin of another build is refused
// by its numbers rather than crashing on a changed layout.
//
// The plugin links libtorch_cuda and libc10_cuda: loading it registers
// torch's CUDA backend (tensors on kCUDA, pinned host memory, CUDA
// generators) and the CUDA kernels of the batchpilot:: ops
// (kernels/paged_attention.h) with the dispatcher. Everything else goes
// through this table.
//
// Conventions: a function returning int returns 0 on success and otherwise
// writes a one-line reason (NUL-terminated, truncated to errSize) into err.
// Device numbers are CUDA ordinals.
#pragma once

#include <stddef.h>
#include <stdint.h>

// Raised whenever the table's layout or meaning changes.
#define BATCHPILOT_CUDA_PLUGIN_ABI 1u

extern "C" {

// A capture body: runs the step on the current (capture) stream; 0 on
// success, else a reason in err. It must not throw.
typedef int (*BpCudaGraphBody)(void *context, char *err, size_t errSize);

struct BpCudaPluginApi {
    uint32_t abi;             // BATCHPILOT_CUDA_PLUGIN_ABI of the plugin
    uint32_t size;            // sizeof(BpCudaPluginApi) of the plugin
    const char *torchVersion; // the libtorch it was built against ("2.11.0")

    // CUDA devices the runtime sees; < 0 when the runtime cannot start (no
    // driver, a driver older than the runtime, no device), with its words.
    int (*deviceCount)(char *err, size_t errSize);
    // Free and total bytes of `device`; with emptyCache, libtorch's cached
    // blocks go back to the device first.
    int (*memoryInfo)(int device, int emptyCache, int64_t *freeBytes, int64_t *totalBytes, char *err,
                      size_t errSize);
    // Bytes libtorch's caching allocator holds on `device` now, and the most
    // it has held since the last resetPeak (its high-water mark).
    int64_t (*reservedBytes)(int device);
    int64_t (*peakAllocatedBytes)(int device);
    void (*resetPeak)(int device);
    // Waits for the work queued on `device`'s current stream.
    int (*synchronize)(int device, char *err, size_t errSize);

    // CUDA graphs sharing one memory pool and one capture stream. create()
    // returns null (reason in err) on failure; destroy() frees the graphs.
    void *(*graphsCreate)(int device, char *err, size_t errSize);
    void (*graphsDestroy)(void *graphs);
    // Runs body twice on the capture stream (warm-up), then captures a
    // third run as graph `key`. On any failure (the body's, or CUDA's) the
    // capture is ended and the half-made graph dropped before it returns,
    // so the stream is usable and eager steps run on. failInside (a test
    // hook) makes the capture fail after it has begun, as a body that
    // breaks capture would.
    int (*graphsCapture)(void *graphs, int key, BpCudaGraphBody body, void *context, int failInside,
                         char *err, size_t errSize);
    // Replays graph `key` on the current stream.
    int (*graphsReplay)(void *graphs, int key, char *err, size_t errSize);
};

// The plugin's one exported symbol: its table, or null when `abi` (the
// caller's BATCHPILOT_CUDA_PLUGIN_ABI) is not the plugin's.
typedef const BpCudaPluginApi *(*BpCudaPluginEntry)(uint32_t abi);
const BpCudaPluginApi *batchpilot_cuda_plugin(uint32_t abi);
}
