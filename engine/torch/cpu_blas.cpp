#include "cpu_blas.h"
#include "cpu_kernels.h"

#include <ATen/CPUFunctions.h>
#include <ATen/record_function.h>

#include <string>

#ifdef BATCHPILOT_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace bp {

namespace {

// Few rows, both of one CPU dtype the fused kernels take: the few-rows product.
bool fewRows(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b)
{
    return cpuFused(x) && w.scalar_type() == x.scalar_type() && w.is_cpu() && w.dim() == 2 &&
           w.is_contiguous() && x.dim() >= 1 && x.is_contiguous() && x.size(-1) == w.size(1) &&
           x.size(-1) > 0 && x.numel() / x.size(-1) <= kSmallLinearRows &&
           (!b.defined() || (b.scalar_type() == x.scalar_type() && b.dim() == 1 && b.is_cpu()));
}

// float32 x [..., k] and w [n, k] for a GEMM of our own: contiguous CPU tensors.
bool gemmable(const at::Tensor &x, const at::Tensor &w)
{
    return x.is_cpu() && x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat && w.dim() == 2 &&
           w.is_contiguous() && x.dim() >= 1 && x.is_contiguous() && x.size(-1) == w.size(1);
}

// C[m, n] = beta C + A[m, k] · op(B), op(B) = B[n, k]^T (transB) or B[k, n].
// OpenBLAS when it runs kernels made for this processor, else ATen's CPU
// BLAS (MKL in PyPI's libtorch), called below the dispatcher (at::cpu::, on
// tensors over the same memory) so that no ATen op is recorded for it: a
// step's op count does not depend on which product runs.
void gemm(bool transB, int m, int n, int k, const float *a, int lda, const float *b, int ldb, float beta,
          float *c, int ldc)
{
    if (m <= 0 || n <= 0)
        return;
#ifdef BATCHPILOT_HAVE_OPENBLAS
    if (openBlasTuned()) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b,
                    ldb, beta, c, ldc);
        return;
    }
#endif
    const auto opts = at::TensorOptions().dtype(at::kFloat);
    const at::Tensor A = at::from_blob(const_cast<float *>(a), {m, k}, {lda, 1}, opts);
    const at::Tensor B = transB ? at::from_blob(const_cast<float *>(b), {k, n}, {1, ldb}, opts)
                                : at::from_blob(const_cast<float *>(b), {k, n}, {ldb, 1}, opts);
    at::Tensor C = at::from_blob(c, {m, n}, {ldc, 1}, opts);
    const at::RecordFunctionGuard unrecorded(false); // its inner resolve_conj calls are no op of the step
    if (beta == 0.f)
        at::cpu::mm_out(C, A, B);
    else
        at::cpu::addmm_out(C, C, A, B, beta, 1.0f);
}

} // namespace

bool haveOpenBlas()
{
#ifdef BATCHPILOT_HAVE_OPENBLAS
    return true;
#else
    return false;
#endif
}

bool openBlasTuned()
{
#ifdef BATCHPILOT_HAVE_OPENBLAS
    static const bool tuned = [] {
        // A DYNAMIC_ARCH OpenBLAS that does not recognise the processor (a
        // hypervisor's masked model: "Intel(R) Xeon(R) Processor") falls back
        // to its SSE3 kernels, several times slower than AVX2/AVX-512 ones.
        const std::string core = openblas_get_corename();
        const bool fallback = core == "Prescott" || core == "Core2" || core == "Penryn" ||
                              core == "Dunnington" || core == "Nehalem" || core == "Atom" ||
                              core == "Katmai" || core == "Banias";
        return !(fallback && __builtin_cpu_supports("avx2"));
    }();
    return tuned;
#else
    return false;
#endif
}

void setBlasThreads(int threads)
{
#ifdef BATCHPILOT_HAVE_OPENBLAS
    static thread_local int current = -1;
    if (threads > 0 && threads != current) {
        openblas_set_num_threads(threads);
        current = threads;
    }
#else
    (void)threads;
#endif
}

at::Tensor linear(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b)
{
    if (fewRows(x, w, b))
        return smallLinearCpu(x, w, b);
    // The same ATen calls whatever the shape (a step's op count must not
    // depend on what it holds): an empty output, the bias copied into it.
    if (gemmable(x, w) && (!b.defined() || (b.scalar_type() == at::kFloat && b.dim() == 1))) {
        const auto k = int(x.size(-1)), n = int(w.size(0));
        const int m = k > 0 ? int(x.numel() / k) : 0;
        std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
        shape.back() = n;
        at::Tensor out = at::empty(shape, x.options());
        float beta = 0;
        if (b.defined()) {
            out.copy_(b.expand(shape)); // the bias in every row, then += x · w^T (never into b itself)
            beta = 1;
        }
        gemm(true, m, n, k, x.data_ptr<float>(), k, w.data_ptr<float>(), k, beta, out.data_ptr<float>(), n);
        return out;
    }
    return at::linear(x, w, b);
}

void addLinear(at::Tensor &acc, const at::Tensor &x, const at::Tensor &w, const at::Tensor &b)
{
    if (acc.is_cpu() && acc.is_contiguous() && acc.scalar_type() == x.scalar_type() && fewRows(x, w, b)) {
        addSmallLinearCpu(acc, x, w);
        if (b.defined())
            acc.add_(b);
        return;
    }
    if (acc.is_cpu() && acc.is_contiguous() && acc.scalar_type() == at::kFloat && gemmable(x, w) &&
        acc.size(-1) == w.size(0) &&
        acc.numel() / std::max<std::int64_t>(1, acc.size(-1)) ==
            x.numel() / std::max<std::int64_t>(1, x.size(-1))) {
        const auto k = int(x.size(-1)), n = int(w.size(0));
        const int m = k > 0 ? int(x.numel() / k) : 0;
        gemm(true, m, n, k, x.data_ptr<float>(), k, w.data_ptr<float>(), k, 1.0f, acc.data_ptr<float>(), n);
        if (b.defined())
            acc.add_(b);
        return;
    }
    acc.add_(at::linear(x, w, b));
}

void sgemmNT(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc)
{
    gemm(true, m, n, k, a, lda, b, ldb, 0.0f, c, ldc);
}

void sgemmNN(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc)
{
    gemm(false, m, n, k, a, lda, b, ldb, 0.0f, c, ldc);
}

} // namespace bp
