// The two ops a paged decoder layer needs besides libtorch's own, registered
// with the dispatcher as `batchpilot::paged_attention` and
// `batchpilot::write_kv` (CPU kernels here, CUDA kernels in
// paged_attention.cu), so that they show up in profiles and RecordFunction
// like any ATen op and are captured into CUDA graphs like one.
//
//   writeKv(kPool, vPool, k, v, slots)
//     k, v   [tokens, kvHeads, headDim], each row contiguous (a view of a
//            fused QKV projection is fine)
//     slots  int32 [tokens]: where each token's key and value go
//   pagedAttention(q, kPool, vPool, blockTables, querySeq, positions, blockTokens, scale, window)
//     q            [tokens, heads, headDim], heads contiguous in a row
//     kPool/vPool  [kvHeads, blocks, blockTokens, headDim], contiguous (kv_pool.h):
//                  a token's slot is block * blockTokens + offset, and one
//                  head's rows of consecutive blocks are contiguous
//     blockTables  int32 [sequences, width]: each sequence's blocks
//     querySeq     int32 [tokens]: the sequence of each query token
//     positions    int32 [tokens]: its position; it attends causally to its
//                  sequence's positions 0 .. position
//     window       0, or a sliding window of that many keys: a query at p
//                  attends to positions max(0, p - window + 1) .. p (Gemma 3's
//                  local layers; transformers' kv > q - window). CPU only: the
//                  CUDA kernel refuses a window (docs/models.md)
//     -> [tokens, heads, headDim], contiguous
//   heads must be a multiple of kvHeads (grouped-query attention).
//
// One call covers every query token of a step: prefill chunks and decodes of
// any lengths together, never a loop over sequences. A query's result
// depends only on its own sequence's keys and values (the same summation
// order in any company), so batching changes nothing for it.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include <ATen/ATen.h>

namespace bp {

void writeKv(at::Tensor &kPool, at::Tensor &vPool, const at::Tensor &k, const at::Tensor &v,
             const at::Tensor &slots);
at::Tensor pagedAttention(const at::Tensor &q, const at::Tensor &kPool, const at::Tensor &vPool,
                          const at::Tensor &blockTables, const at::Tensor &querySeq,
                          const at::Tensor &positions, std::int64_t blockTokens, double scale,
                          std::int64_t window = 0);

} // namespace bp
