// Fused CPU kernels for the decoder step: what a Llama-style layer
// does between its matrix products, in one pass each instead of several ATen
// ops with a fresh tensor after each, and the matrix products of few rows
// (decode steps) as one stream over the weights.
//
// Only for CPU tensors of float32 or bfloat16 (callers check cpuFused());
// the results match the ATen formulation they replace up to float rounding
// (test_cpu_kernels). Threads: at::get_num_threads() of them, through
// engine/core/work_pool.h (chunks taken by whichever threads run, so a step does
// not wait a scheduler slice for a descheduled thread's share).
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include "engine/core/work_pool.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

namespace bp {

// fn(begin, end) over [0, n) in chunks of at least `grain`, on as many
// threads as libtorch's intra-op setting (--threads) names.
inline void cpuParallel(std::int64_t n, std::int64_t grain,
                        const std::function<void(std::int64_t, std::int64_t)> &fn)
{
    parallelChunks(n, grain, at::get_num_threads(), fn);
}

// True for a CPU tensor of float32 or bfloat16: the kernels below apply.
bool cpuFused(const at::Tensor &t);

// RMSNorm as transformers' LlamaRMSNorm (in float32, the weight last):
// weight * (x / sqrt(mean(x^2) + eps)) over the last dimension of x [rows, d].
at::Tensor rmsNormCpu(const at::Tensor &x, const at::Tensor &weight, double eps);

// Rotary embedding in place on the first `heads` heads of each row of
// qk [tokens, >= heads * D] (row stride any, each head contiguous): x * cos +
// rotate_half(x) * sin with cos/sin [positions, D] at positions[t] (int32).
void ropeInPlaceCpu(at::Tensor &qk, std::int64_t heads, std::int64_t D, const at::Tensor &cos,
                    const at::Tensor &sin, const at::Tensor &positions);

// silu(gateUp[:, :f]) * gateUp[:, f:] for gateUp [rows, 2f]: [rows, f].
at::Tensor swigluCpu(const at::Tensor &gateUp);

// The greedy next token of each row of logits [rows, vocab] (float32 or
// bfloat16, contiguous): int64 [rows], the first largest entry of each row, a
// NaN counting as the largest (at::argmax's answer). One pass over a row at
// memory speed where ATen's reduction compares one element at a time (at a
// 152 K vocabulary, a tenth of a batch-16 decode step).
at::Tensor argmaxRowsCpu(const at::Tensor &logits);

// acc [..., n] += x [..., k] · w [n, k]^T (m rows) (float32 or bfloat16 weights, x and acc
// of the same dtype as w): for few rows m, one pass over the weights split
// between the threads, each weight row read once for all m rows.
void addSmallLinearCpu(at::Tensor &acc, const at::Tensor &x, const at::Tensor &w);
// x · w^T (+ b) the same way: [..., n]. Neither dispatches more ATen ops than
// the GEMM path of bp::linear / bp::addLinear does.
at::Tensor smallLinearCpu(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b = at::Tensor());

// Rows up to which the products above beat a general GEMM (OpenBLAS for
// float32, oneDNN for bfloat16) on a memory-bound product.
constexpr std::int64_t kSmallLinearRows = 16;

} // namespace bp
