// The argument checks both halves of the paged-attention ops share: the CPU
// kernels (paged_attention.cpp) and the CUDA ones the CUDA plugin registers
// (engine/torch/cuda/cuda_plugin.cpp), so that a bad call reads the same on
// either device.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include <ATen/ATen.h>

namespace bp {

inline void checkWriteKv(const at::Tensor &kPool, const at::Tensor &vPool, const at::Tensor &k,
                         const at::Tensor &v, const at::Tensor &slots)
{
    TORCH_CHECK(kPool.dim() == 4 && vPool.sizes() == kPool.sizes() && kPool.is_contiguous() &&
                    vPool.is_contiguous(),
                "write_kv: the pools must be contiguous [kv_heads, blocks, block_tokens, head_dim]");
    TORCH_CHECK(k.dim() == 3 && v.sizes() == k.sizes() && k.size(1) == kPool.size(0) &&
                    k.size(2) == kPool.size(3),
                "write_kv: k and v must be [tokens, kv_heads, head_dim] of the pool's heads and head_dim");
    TORCH_CHECK(k.stride(2) == 1 && k.stride(1) == k.size(2) && v.stride(2) == 1 && v.stride(1) == v.size(2),
                "write_kv: each row of k and v must be contiguous");
    TORCH_CHECK(k.scalar_type() == kPool.scalar_type() && v.scalar_type() == kPool.scalar_type(),
                "write_kv: k and v must have the pool's dtype");
    TORCH_CHECK(slots.scalar_type() == at::kInt && slots.dim() == 1 && slots.size(0) == k.size(0) &&
                    slots.is_contiguous(),
                "write_kv: slots must be int32 [tokens]");
}

inline void checkAttention(const at::Tensor &q, const at::Tensor &kPool, const at::Tensor &vPool,
                           const at::Tensor &blockTables, const at::Tensor &querySeq,
                           const at::Tensor &positions, std::int64_t blockTokens)
{
    TORCH_CHECK(q.dim() == 3 && q.stride(2) == 1 && q.stride(1) == q.size(2),
                "paged_attention: q must be [tokens, heads, head_dim] with each row's heads contiguous");
    TORCH_CHECK(
        kPool.dim() == 4 && vPool.sizes() == kPool.sizes() && kPool.is_contiguous() &&
            vPool.is_contiguous() && kPool.size(3) == q.size(2),
        "paged_attention: the pools must be contiguous [kv_heads, blocks, block_tokens, head_dim] of q's "
        "head_dim");
    TORCH_CHECK(kPool.size(0) > 0 && q.size(1) % kPool.size(0) == 0,
                "paged_attention: heads must be a multiple of kv_heads");
    TORCH_CHECK(kPool.scalar_type() == q.scalar_type() && vPool.scalar_type() == q.scalar_type(),
                "paged_attention: q and the pools must have one dtype");
    TORCH_CHECK(blockTables.scalar_type() == at::kInt && blockTables.dim() == 2 &&
                    blockTables.is_contiguous(),
                "paged_attention: block_tables must be contiguous int32 [sequences, width]");
    for (const at::Tensor *t : {&querySeq, &positions})
        TORCH_CHECK(t->scalar_type() == at::kInt && t->dim() == 1 && t->size(0) == q.size(0) &&
                        t->is_contiguous(),
                    "paged_attention: query_seq and positions must be int32 [tokens]");
    TORCH_CHECK(blockTokens > 0 && blockTokens == kPool.size(2),
                "paged_attention: block_tokens must be the pools' block size");
}

} // namespace bp
