// The head sizes the paged-attention kernels handle, torch-free so that a
// model's loader can refuse a config before any weight is made, and the CUDA
// kernels (paged_attention.cu, nvcc) pick their instances from the same list.
//
//   CUDA: 32, 64, 96, 128, 256 (each lane of a warp holds headDim / 32
//         elements; one instance per size, paged_attention.cu)
//   CPU:  1 .. 512 (paged_attention.cpp's scratch rows)
#pragma once

#include <string>

namespace bp::kernels {

inline constexpr int kCpuMaxHeadDim = 512;

constexpr bool cudaAttentionSupports(int headDim)
{
    return headDim == 32 || headDim == 64 || headDim == 96 || headDim == 128 || headDim == 256;
}

// Empty when the kernels of the device (`cuda` or the CPU) handle `headDim`;
// otherwise why not, naming the sizes they do handle.
inline std::string headDimProblem(int headDim, bool cuda)
{
    // Appended piece by piece: GCC 12 warns (-Warray-bounds, a false
    // positive) on "literal" + std::to_string(...) chains inlined here.
    std::string out;
    if (cuda && !cudaAttentionSupports(headDim)) {
        out.append("head size ").append(std::to_string(headDim));
        out.append(" has no CUDA paged-attention kernel (built for 32, 64, 96, 128 and 256); run it with "
                   "--device cpu");
    } else if (!cuda && (headDim < 1 || headDim > kCpuMaxHeadDim)) {
        out.append("head size ").append(std::to_string(headDim));
        out.append(" is outside the CPU paged-attention kernel's 1..").append(std::to_string(kCpuMaxHeadDim));
    }
    return out;
}

} // namespace bp::kernels
