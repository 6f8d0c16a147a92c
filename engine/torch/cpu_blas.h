// Matrix products on the CPU through OpenBLAS (Debian's, pthreads build).
//
// Why: PyPI's libtorch does its float32 products with the MKL it links in,
// and MKL runs its generic kernels on AMD processors. On the development
// machines (AMD EPYC) a decode step's matrix-vector products took 2.7x as long
// as through OpenBLAS, and a step of builtin:tiny-decoder (small) 4x as long as
// with Debian's libtorch 1.13 (docs/benchmarks.md, "CPU figures before and
// after"). These helpers call OpenBLAS for float32 on the CPU and ATen
// everywhere else (CUDA, bfloat16, float16); without OpenBLAS at build time
// they are ATen's.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include <ATen/ATen.h>

namespace bp {

// x @ w^T + b for x [..., in], w [out, in], b [out] or undefined: at::linear's contract.
// On the CPU, products of few rows (decode steps; cpu_kernels.h) in float32 or
// bfloat16 stream the weights once, split between ATen's threads.
at::Tensor linear(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b = at::Tensor());

// acc += x @ w^T + b, acc [..., out] contiguous of x's dtype: into acc itself
// on the CPU (a GEMM with beta 1, or the few-rows product), no tensor between.
void addLinear(at::Tensor &acc, const at::Tensor &x, const at::Tensor &w, const at::Tensor &b = at::Tensor());

// C[m, n] = A[m, k] · B[n, k]^T on float32 row-major buffers with the given
// leading dimensions (OpenBLAS's sgemm where openBlasTuned(), else ATen's
// CPU BLAS, with no ATen op recorded). For
// kernels (paged attention) that multiply inside one op.
void sgemmNT(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc);
// C[m, n] = A[m, k] · B[k, n].
void sgemmNN(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc);

// OpenBLAS's threads (process-wide); a no-op without it.
void setBlasThreads(int threads);
bool haveOpenBlas();
// OpenBLAS is linked and runs kernels for this processor. Debian's OpenBLAS
// 0.3.21 does not recognise a processor whose model a hypervisor masks and
// falls back to its SSE3 ("Prescott") kernels: on such a machine with AVX2
// the float32 GEMMs go to ATen's CPU BLAS instead (prefill 3-5x faster here; docs/benchmarks.md).
bool openBlasTuned();

} // namespace bp
