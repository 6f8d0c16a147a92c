// The CUDA side of the paged-attention ops (paged_attention.h), as plain C++
// so that paged_attention.cpp (g++, torch headers) can call what
// paged_attention.cu (nvcc, no torch headers) defines. Built only with a CUDA
// libtorch and nvcc (BATCHPILOT_TORCH_CUDA).
//
// Layouts (element counts, not bytes):
//   q            [tokens, heads, headDim]; row stride qRowStride, heads contiguous
//   kPool/vPool  [kvHeads, blocks, blockTokens, headDim], contiguous; a token's
//                slot = block * blockTokens + offset
//   blockTables  int32 [sequences, tableStride]
//   querySeq     int32 [tokens]: the row of blockTables a query token belongs to
//   positions    int32 [tokens]: its position; it attends to its sequence's
//                positions 0 .. position (causal, its own key included)
//   out          [tokens, heads, headDim], contiguous
// Launches on `stream` (a cudaStream_t); throws std::runtime_error naming
// the CUDA error when a launch fails.
#pragma once

#include "head_dims.h"

#include <cstdint>

namespace bp::kernels {

enum class Element { Float32, BFloat16, Float16 };

struct AttentionArgs {
    const void *q = nullptr;
    std::int64_t qRowStride = 0;
    const void *kPool = nullptr;
    const void *vPool = nullptr;
    const std::int32_t *blockTables = nullptr;
    std::int64_t tableStride = 0;
    const std::int32_t *querySeq = nullptr;
    const std::int32_t *positions = nullptr;
    void *out = nullptr;
    std::int64_t tokens = 0;
    std::int64_t blocks = 0; // in the pools
    int heads = 0, kvHeads = 0, headDim = 0, blockTokens = 0;
    float scale = 1.0f;
};

struct WriteKvArgs {
    const void *k = nullptr;
    std::int64_t kRowStride = 0;
    const void *v = nullptr;
    std::int64_t vRowStride = 0;
    void *kPool = nullptr;
    void *vPool = nullptr;
    const std::int32_t *slots = nullptr;
    std::int64_t tokens = 0;
    std::int64_t blocks = 0;                       // in the pools
    int kvHeads = 0, blockTokens = 0, headDim = 0; // each k / v row holds kvHeads * headDim, heads contiguous
};

void launchPagedAttention(const AttentionArgs &args, Element element, void *stream);
void launchWriteKv(const WriteKvArgs &args, Element element, void *stream);

} // namespace bp::kernels
