// The memory bandwidth of a device as a plain copy measures it: the yardstick
// a memory-bound step is judged against. A decode step at batch 1 must read
// every weight once, so its floor is weight bytes / this bandwidth; the GPU
// check (bench/gpu/check.sh) and the CPU step's benchmark (docs/benchmarks.md)
// judge the step against the figure measured in the same run, on the device
// it ran on, not against a constant from another machine.
//
// Method: one buffer of `bytes` copied into another with libtorch's copy_
// (a device-to-device copy on CUDA, ATen's parallel copy on the CPU), once
// to warm up and then `repeats` times; each copy reads `bytes` and writes
// `bytes`, so the bandwidth is 2 * bytes / the copy's time. The median copy
// is reported, with the fastest and slowest. On the CPU the copy runs on
// the calling thread's intra-op threads (`threads`; 0 = every core).
//
// Torch-free header: engine/torch/memory_bandwidth.cpp does the work; without
// libtorch measureMemoryBandwidth() is Unavailable.
#pragma once

#include "engine/core/result.h"

#include <cstdint>
#include <string>

namespace bp {

struct BandwidthReport {
    std::string device;     // "cpu" or "cuda:N"
    std::string deviceName; // the GPU's name, or the CPU's model name
    std::int64_t bytes = 0; // one buffer
    int repeats = 0;
    int threads = 0;        // CPU intra-op threads used (0 on CUDA)
    double medianSeconds = 0, minSeconds = 0, maxSeconds = 0; // one copy
    // 2 * bytes / medianSeconds: bytes read plus bytes written per second.
    double bytesPerSecond() const { return medianSeconds > 0 ? 2.0 * double(bytes) / medianSeconds : 0; }
};

// InvalidArgument for bytes < 1 MiB or repeats < 1; Unavailable when the
// device is not there (or this build has no libtorch); ResourceExhausted when
// the two buffers do not fit.
Result<BandwidthReport> measureMemoryBandwidth(const std::string &device, std::int64_t bytes, int repeats,
                                               int threads = 0);
// The libtorch side (engine/torch/memory_bandwidth.cpp).
Result<BandwidthReport> measureTorchMemoryBandwidth(const std::string &device, std::int64_t bytes, int repeats,
                                                    int threads);

} // namespace bp
