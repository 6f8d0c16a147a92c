#include "cpu_blas.h"
#include "cpu_kernels.h"

#ifdef BATCHPILOT_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace bp {

bool haveOpenBlas()
{
#ifdef BATCHPILOT_HAVE_OPENBLAS
    return true;
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

namespace {

// Few rows, both of one CPU dtype the fused kernels take: the few-rows product.
bool fewRows(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b)
{
    return cpuFused(x) && w.scalar_type() == x.scalar_type() && w.is_cpu() && w.dim() == 2 &&
           w.is_contiguous() && x.dim() >= 1 && x.is_contiguous() && x.size(-1) == w.size(1) &&
           x.size(-1) > 0 && x.numel() / x.size(-1) <= kSmallLinearRows &&
           (!b.defined() || (b.scalar_type() == x.scalar_type() && b.dim() == 1 && b.is_cpu()));
}

} // namespace

at::Tensor linear(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b)
{
    if (fewRows(x, w, b))
        return smallLinearCpu(x, w, b);
#ifdef BATCHPILOT_HAVE_OPENBLAS
    // The same ATen calls whatever the shape (a step's op count must not
    // depend on what it holds): an empty output, the bias copied into it.
    if (x.is_cpu() && x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat && w.dim() == 2 &&
        w.is_contiguous() && (!b.defined() || (b.scalar_type() == at::kFloat && b.dim() == 1)) &&
        x.dim() >= 1 && x.is_contiguous() && x.size(-1) == w.size(1)) {
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
        if (m > 0 && n > 0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x.data_ptr<float>(), k,
                        w.data_ptr<float>(), k, beta, out.data_ptr<float>(), n);
        return out;
    }
#endif
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
#ifdef BATCHPILOT_HAVE_OPENBLAS
    if (acc.is_cpu() && acc.is_contiguous() && acc.scalar_type() == at::kFloat && x.is_cpu() &&
        x.scalar_type() == at::kFloat && x.is_contiguous() && w.scalar_type() == at::kFloat && w.dim() == 2 &&
        w.is_contiguous() && x.dim() >= 1 && x.size(-1) == w.size(1) && acc.size(-1) == w.size(0) &&
        acc.numel() / std::max<std::int64_t>(1, acc.size(-1)) ==
            x.numel() / std::max<std::int64_t>(1, x.size(-1))) {
        const auto k = int(x.size(-1)), n = int(w.size(0));
        const int m = k > 0 ? int(x.numel() / k) : 0;
        if (m > 0 && n > 0)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, x.data_ptr<float>(), k,
                        w.data_ptr<float>(), k, 1.0f, acc.data_ptr<float>(), n);
        if (b.defined())
            acc.add_(b);
        return;
    }
#endif
    acc.add_(at::linear(x, w, b));
}

void sgemmNT(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc)
{
#ifdef BATCHPILOT_HAVE_OPENBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
#else
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0;
            for (int p = 0; p < k; ++p)
                s += a[i * lda + p] * b[j * ldb + p];
            c[i * ldc + j] = s;
        }
#endif
}

void sgemmNN(int m, int n, int k, const float *a, int lda, const float *b, int ldb, float *c, int ldc)
{
#ifdef BATCHPILOT_HAVE_OPENBLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
#else
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
            float s = 0;
            for (int p = 0; p < k; ++p)
                s += a[i * lda + p] * b[p * ldb + j];
            c[i * ldc + j] = s;
        }
#endif
}

} // namespace bp
