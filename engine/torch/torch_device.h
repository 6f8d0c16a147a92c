// Device and thread selection for the libtorch backends. Torch-free header;
// torch_device.cpp is the one place that asks libtorch about CUDA.
//
// Device strings (ModelSpec::device):
//   "auto"    CUDA device 0 when an NVIDIA driver is present and the CUDA
//             plugin loads and sees a GPU, else the CPU
//   "cpu"     the CPU (the CUDA plugin is never loaded)
//   "cuda"    CUDA device 0; Unavailable, with one line saying what is
//             missing (the plugin, a CUDA library, the driver), otherwise
//   "cuda:N"  CUDA device N; Unavailable when there is no device N
// Anything else is InvalidArgument. The binaries link only libtorch_cpu and
// libc10; CUDA comes from the plugin (cuda_plugin.h), loaded at run time.
#pragma once

#include "engine/core/result.h"
#include "engine/model/backend.h"

#include <exception>
#include <optional>
#include <string>

namespace bp {

struct TorchDevice {
    bool cuda = false;
    int index = 0;
    std::string name = "cpu"; // "cpu" or "cuda:N", what ModelInfo::device reports
};

Result<TorchDevice> resolveTorchDevice(const std::string &spec);

// Number of CUDA devices (0 without a driver, the plugin or a GPU); with a
// driver present (or BATCHPILOT_CUDA_PLUGIN set) it loads the plugin.
int torchCudaDeviceCount();

// ModelSpec::threads -> the intra-op thread count: 0 means every core.
int resolveTorchThreads(int requested);

// Makes the calling thread run torch work on `threads` intra-op threads.
// libtorch's OpenMP and BLAS thread counts are per calling thread, so every
// executor thread calls this at the top of Backend::run(); after the first
// call on a thread it is a thread-local comparison.
void useTorchThreads(int threads);

// Keeps the C library from handing freed tensor memory back to the kernel
// after every op (glibc: mmap threshold 32 MiB, trim threshold 512 MiB, top
// pad 64 MiB). A forward pass allocates and frees the same few large blocks
// over and over; with glibc's defaults each one is a fresh mmap or brk and
// every page is faulted in again, which made a batch of 8 x 64 tokens cost 5x
// the CPU time of the same work with the memory kept (docs/models.md).
// Process-wide, applied once by the first torch backend created; a no-op off
// glibc.
void keepHostMemoryMapped();

// Backend::probeMaxBatch for a backend on a CUDA device: runs synthetic
// batches of `length`-token sequences (1 new token each for generative
// models) through `backend`, doubling from 1 and then bisecting, and returns
// the largest size in [1, upTo] that does not fail with ResourceExhausted
// (0 when even one sequence does not fit). Any other failure ends the probe
// with what is known so far. Costs a few batches at start-up.
std::optional<int> probeLargestBatch(Backend &backend, int length, int upTo);

// An exception thrown by libtorch as a Status: ResourceExhausted for "out of
// memory", Internal otherwise; the message starts with `context` and leaves
// out the C++ backtrace c10::Error carries.
Status torchFailure(const std::string &context, const std::exception &error);

} // namespace bp
