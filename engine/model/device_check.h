// Correctness of the paged step on a device, checked in one call: what the
// GPU check (bench/gpu/check.sh, `batchpilot-bench device-check`) runs first on
// a GPU machine, where no Qt test can run, and what test_paged_attention runs
// on the CPU.
//
//  - the KV write and paged-attention ops on `device` against a dense
//    reference computed in float64 on the CPU, on block tables in shuffled
//    order: decode rows, a prefill chunk beside decodes, grouped-query heads,
//    head sizes 32, 64 and 128, blocks of 1, 8 and 16 tokens; float32,
//    bfloat16 and float16. The error is the largest |out - ref| over the
//    largest |ref| of the case;
//  - builtin:tiny-decoder (preset `small`, float32) generating on `device`
//    against the same model on the CPU, with CUDA graphs on and off: the
//    tokens must agree wherever the CPU's top-2 logit margin exceeds 1e-3.
//
// Torch-free header: engine/torch/device_check.cpp does the work; without
// libtorch checkDevice() is Unavailable.
#pragma once

#include "engine/core/result.h"

#include <string>
#include <vector>

namespace bp {

struct DeviceCheckLine {
    std::string name;
    bool passed = false;
    double error = 0;    // relative error (ops) or tokens that differ (decoder)
    double limit = 0;    // what passes
    std::string detail;  // shapes, counts
};

struct DeviceCheckReport {
    std::string device;
    std::vector<DeviceCheckLine> lines;
    bool passed() const
    {
        for (const DeviceCheckLine &l : lines)
            if (!l.passed)
                return false;
        return !lines.empty();
    }
};

// Unavailable when `device` is not there (or libtorch is not built in); the
// report otherwise (a failed line is a finding, not an error).
Result<DeviceCheckReport> checkDevice(const std::string &device, bool decoder = true);
// The libtorch side of checkDevice() (engine/torch/device_check.cpp).
Result<DeviceCheckReport> checkTorchDevice(const std::string &device, bool decoder);

} // namespace bp
