#include "cpu_kernels.h"
#include "kernels/dot_rows.h"
#include "kernels/vec_math.h"


#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace bp {

namespace {

using Bf16 = c10::BFloat16;

inline float toF(float v)
{
    return v;
}
inline float toF(Bf16 v)
{
    return float(v);
}
template <class T> inline T fromF(float v)
{
    return T(v);
}

// rows [n0, n1) of w against the m rows of x (float, contiguous, k wide):
// y[i * ldy + j] (+)= x_i · w_j. Each weight row is read once and kept in L1
// while the m dot products run over it, four x rows at a time.
template <class W>
__attribute__((always_inline)) inline void dotRowsBody(const float *x, std::int64_t m, std::int64_t k,
                                                       const W *w, std::int64_t n0, std::int64_t n1, float *y,
                                                       std::int64_t ldy, bool accumulate)
{
    for (std::int64_t j = n0; j < n1; ++j) {
        const W *row = w + j * k;
        std::int64_t i = 0;
        for (; i + 4 <= m; i += 4) {
            const float *x0 = x + i * k, *x1 = x0 + k, *x2 = x1 + k, *x3 = x2 + k;
            float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
            for (std::int64_t e = 0; e < k; ++e) {
                const float r = toF(row[e]);
                s0 += x0[e] * r;
                s1 += x1[e] * r;
                s2 += x2[e] * r;
                s3 += x3[e] * r;
            }
            float *yj = y + i * ldy + j;
            if (accumulate) {
                yj[0] += s0;
                yj[ldy] += s1;
                yj[2 * ldy] += s2;
                yj[3 * ldy] += s3;
            } else {
                yj[0] = s0;
                yj[ldy] = s1;
                yj[2 * ldy] = s2;
                yj[3 * ldy] = s3;
            }
        }
        for (; i < m; ++i) {
            const float *xi = x + i * k;
            float s = 0.f;
#pragma omp simd reduction(+ : s)
            for (std::int64_t e = 0; e < k; ++e)
                s += xi[e] * toF(row[e]);
            y[i * ldy + j] = accumulate ? y[i * ldy + j] + s : s;
        }
    }
}

// Compiled for AVX-512, AVX2 and the baseline, picked at run time (the build
// targets the baseline x86-64), as paged attention's inner loops are.
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) void
dotRowsF32(const float *x, std::int64_t m, std::int64_t k, const float *w, std::int64_t n0, std::int64_t n1,
           float *y, std::int64_t ldy, bool accumulate)
{
    dotRowsBody(x, m, k, w, n0, n1, y, ldy, accumulate);
}

__attribute__((target_clones("avx512f", "avx2,fma", "default"))) void
dotRowsBf16(const float *x, std::int64_t m, std::int64_t k, const Bf16 *w, std::int64_t n0, std::int64_t n1,
            float *y, std::int64_t ldy, bool accumulate)
{
    dotRowsBody(x, m, k, w, n0, n1, y, ldy, accumulate);
}

// y [m, n] (+)= x [m, k] · w^T in float, split over the weight rows.
void smallProduct(const float *x, std::int64_t m, std::int64_t k, const at::Tensor &w, float *y,
                  bool accumulate)
{
    const std::int64_t n = w.size(0);
    // Enough rows per task that a task streams at least ~128 KiB of weights (a
    // small layer runs on the calling thread: no parallel region for it).
    const std::int64_t grain =
        std::max<std::int64_t>(16, (128 << 10) / std::max<std::int64_t>(1, k * w.element_size()));
    // rows [b, e) of w: the AVX-512 register tiles (kernels/dot_rows.h) where
    // the processor has them, else the clones above
    const bool tiles = dotRowsAvx512();
    const bool f32 = w.scalar_type() == at::kFloat;
    const void *wp = w.data_ptr();
    cpuParallel(n, grain, [&](std::int64_t b, std::int64_t e) {
        if (f32) {
            const auto *rows = static_cast<const float *>(wp);
            (tiles ? dotRowsAvx512F32 : dotRowsF32)(x, m, k, rows, b, e, y, n, accumulate);
        } else if (tiles) {
            dotRowsAvx512Bf16(x, m, k, static_cast<const std::uint16_t *>(wp), b, e, y, n, accumulate);
        } else {
            dotRowsBf16(x, m, k, static_cast<const Bf16 *>(wp), b, e, y, n, accumulate);
        }
    });
}

// x [..., k] as m rows, w [n, k]; no ATen op (a step's op count must not
// depend on which product runs).
void checkSmall(const at::Tensor &x, const at::Tensor &w)
{
    TORCH_CHECK(cpuFused(x) && w.scalar_type() == x.scalar_type() && w.is_cpu() && w.dim() == 2 &&
                    w.is_contiguous() && x.dim() >= 1 && x.is_contiguous() && x.size(-1) == w.size(1),
                "small_linear: x [..., k] and w [n, k] must be contiguous CPU tensors of one dtype");
}

// x as float: its own memory for float32, else a converted copy.
const float *floatRows(const at::Tensor &x, std::vector<float> &buffer)
{
    if (x.scalar_type() == at::kFloat)
        return x.data_ptr<float>();
    const Bf16 *p = x.data_ptr<Bf16>();
    buffer.resize(std::size_t(x.numel()));
    for (std::int64_t i = 0; i < x.numel(); ++i)
        buffer[std::size_t(i)] = float(p[i]);
    return buffer.data();
}

// Rows per task of an elementwise kernel over rows of `width` elements: at
// least ~64 K elements, so that a decode step's or a short prompt's norm runs
// on the calling thread (a parallel region costs more than the work, and far
// more when a thread of the pool is descheduled on a busy machine).
std::int64_t grainRows(std::int64_t width)
{
    return std::max<std::int64_t>(1, (64 << 10) / std::max<std::int64_t>(1, width));
}

// o[i] = silu(g[i]) * u[i] over a row, in float (vec_math.h's exp), rounded once.
template <class T>
__attribute__((always_inline)) inline void siluMulBody(const T *g, const T *u, T *o, std::int64_t f)
{
#pragma omp simd
    for (std::int64_t i = 0; i < f; ++i) {
        const float gv = toF(g[i]);
        o[i] = fromF<T>(gv / (1.f + expVec(-gv)) * toF(u[i]));
    }
}
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) void
siluMulRow(const float *g, const float *u, float *o, std::int64_t f)
{
    siluMulBody(g, u, o, f);
}
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) void siluMulRow(const Bf16 *g, const Bf16 *u,
                                                                                 Bf16 *o, std::int64_t f)
{
    siluMulBody(g, u, o, f);
}

// f(float{}) or f(Bf16{}): the two dtypes the kernels take.
template <class F> void dispatchFused(at::ScalarType type, F &&f)
{
    if (type == at::kFloat)
        f(float{});
    else
        f(Bf16{});
}

} // namespace

bool cpuFused(const at::Tensor &t)
{
    return t.defined() && t.is_cpu() && (t.scalar_type() == at::kFloat || t.scalar_type() == at::kBFloat16);
}

at::Tensor smallLinearCpu(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b)
{
    checkSmall(x, w);
    const std::int64_t k = x.size(-1), m = k > 0 ? x.numel() / k : 0, n = w.size(0);
    std::vector<std::int64_t> shape(x.sizes().begin(), x.sizes().end());
    shape.back() = n;
    std::vector<float> xf;
    const float *xp = floatRows(x, xf);
    if (x.scalar_type() == at::kFloat) {
        at::Tensor out = at::empty(shape, x.options());
        if (b.defined())
            out.copy_(b.expand(shape)); // as the GEMM path: the bias, then += x · w^T
        smallProduct(xp, m, k, w, out.data_ptr<float>(), b.defined());
        return out;
    }
    // bfloat16: summed in float, the bias added in float, rounded once.
    at::Tensor acc = at::empty(shape, x.options().dtype(at::kFloat));
    if (b.defined())
        acc.copy_(b.expand(shape));
    smallProduct(xp, m, k, w, acc.data_ptr<float>(), b.defined());
    return acc.to(x.scalar_type());
}

void addSmallLinearCpu(at::Tensor &acc, const at::Tensor &x, const at::Tensor &w)
{
    checkSmall(x, w);
    const std::int64_t k = x.size(-1), m = k > 0 ? x.numel() / k : 0;
    TORCH_CHECK(acc.scalar_type() == x.scalar_type() && acc.is_contiguous() && acc.dim() >= 1 &&
                    acc.size(-1) == w.size(0) && acc.numel() == m * w.size(0),
                "small_linear: acc must be contiguous [..., n] of x's dtype and rows");
    std::vector<float> xf;
    const float *xp = floatRows(x, xf);
    if (acc.scalar_type() == at::kFloat) {
        smallProduct(xp, m, k, w, acc.data_ptr<float>(), true);
        return;
    }
    at::Tensor sum = acc.to(at::kFloat);
    smallProduct(xp, m, k, w, sum.data_ptr<float>(), true);
    acc.copy_(sum);
}

at::Tensor rmsNormCpu(const at::Tensor &x, const at::Tensor &weight, double eps)
{
    TORCH_CHECK(cpuFused(x) && x.dim() == 2 && x.is_contiguous() && weight.scalar_type() == x.scalar_type() &&
                    weight.dim() == 1 && weight.size(0) == x.size(1) && weight.is_contiguous(),
                "rms_norm: x [rows, d] contiguous, weight [d] of its dtype");
    const std::int64_t rows = x.size(0), d = x.size(1);
    at::Tensor out = at::empty_like(x);
    dispatchFused(x.scalar_type(), [&](auto tag) {
        using scalar_t = decltype(tag);
        const scalar_t *xp = x.data_ptr<scalar_t>(), *wp = weight.data_ptr<scalar_t>();
        scalar_t *op = out.data_ptr<scalar_t>();
        cpuParallel(rows, grainRows(d), [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t r = b; r < e; ++r) {
                const scalar_t *xr = xp + r * d;
                scalar_t *orow = op + r * d;
                float ss = 0.f;
                for (std::int64_t i = 0; i < d; ++i) {
                    const float v = toF(xr[i]);
                    ss += v * v;
                }
                const float inv = 1.f / std::sqrt(ss / float(d) + float(eps));
                // normed in the dtype, then times the weight (transformers' order and roundings)
                for (std::int64_t i = 0; i < d; ++i)
                    orow[i] = fromF<scalar_t>(toF(wp[i]) * toF(fromF<scalar_t>(toF(xr[i]) * inv)));
            }
        });
    });
    return out;
}

void ropeInPlaceCpu(at::Tensor &qk, std::int64_t heads, std::int64_t D, const at::Tensor &cos,
                    const at::Tensor &sin, const at::Tensor &positions)
{
    TORCH_CHECK(cpuFused(qk) && qk.dim() == 2 && qk.stride(1) == 1 && qk.size(1) >= heads * D && D % 2 == 0,
                "rope: qk must be [tokens, >= heads * head_dim] with contiguous rows");
    TORCH_CHECK(cos.scalar_type() == qk.scalar_type() && sin.scalar_type() == qk.scalar_type() &&
                    cos.dim() == 2 && cos.size(1) == D && sin.sizes() == cos.sizes() && cos.is_contiguous() &&
                    sin.is_contiguous(),
                "rope: cos and sin must be contiguous [positions, head_dim] of qk's dtype");
    TORCH_CHECK(positions.scalar_type() == at::kInt && positions.dim() == 1 &&
                    positions.size(0) == qk.size(0) && positions.is_contiguous(),
                "rope: positions must be int32 [tokens]");
    const std::int64_t T = qk.size(0), stride = qk.stride(0), half = D / 2, P = cos.size(0);
    const std::int32_t *pos = positions.data_ptr<std::int32_t>();
    for (std::int64_t t = 0; t < T; ++t)
        TORCH_CHECK(pos[t] >= 0 && pos[t] < P, "rope: position ", pos[t], " outside the table");
    dispatchFused(qk.scalar_type(), [&](auto tag) {
        using scalar_t = decltype(tag);
        scalar_t *base = qk.data_ptr<scalar_t>();
        const scalar_t *cp = cos.data_ptr<scalar_t>(), *sp = sin.data_ptr<scalar_t>();
        cpuParallel(T, grainRows(heads * D), [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t t = b; t < e; ++t) {
                const scalar_t *c = cp + std::int64_t(pos[t]) * D, *s = sp + std::int64_t(pos[t]) * D;
                for (std::int64_t h = 0; h < heads; ++h) {
                    scalar_t *x = base + t * stride + h * D;
                    for (std::int64_t i = 0; i < half; ++i) {
                        const float x1 = toF(x[i]), x2 = toF(x[i + half]);
                        x[i] = fromF<scalar_t>(x1 * toF(c[i]) - x2 * toF(s[i]));
                        x[i + half] = fromF<scalar_t>(x2 * toF(c[i + half]) + x1 * toF(s[i + half]));
                    }
                }
            }
        });
    });
}

at::Tensor swigluCpu(const at::Tensor &gateUp)
{
    TORCH_CHECK(cpuFused(gateUp) && gateUp.dim() == 2 && gateUp.is_contiguous() && gateUp.size(1) % 2 == 0,
                "swiglu: gate_up must be contiguous [rows, 2f]");
    const std::int64_t rows = gateUp.size(0), f = gateUp.size(1) / 2;
    at::Tensor out = at::empty({rows, f}, gateUp.options());
    dispatchFused(gateUp.scalar_type(), [&](auto tag) {
        using scalar_t = decltype(tag);
        const scalar_t *gp = gateUp.data_ptr<scalar_t>();
        scalar_t *op = out.data_ptr<scalar_t>();
        cpuParallel(rows, grainRows(2 * f), [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t r = b; r < e; ++r) {
                const scalar_t *g = gp + r * 2 * f;
                siluMulRow(g, g + f, op + r * f, f);
            }
        });
    });
    return out;
}

namespace {

// The index of row[0, n)'s first largest entry (the first NaN if any).
// The largest value and whether a NaN occurs come from one vectorised pass;
// the index from a second that stops at it.
template <class T>
__attribute__((always_inline)) inline std::int64_t argmaxRowBody(const T *row, std::int64_t n)
{
    float best = -INFINITY;
    int nan = 0;
#pragma omp simd reduction(max : best) reduction(| : nan)
    for (std::int64_t i = 0; i < n; ++i) {
        const float v = toF(row[i]);
        best = v > best ? v : best;
        nan |= v != v;
    }
    for (std::int64_t i = 0; i < n; ++i) {
        const float v = toF(row[i]);
        if (nan ? v != v : v == best)
            return i;
    }
    return 0; // every entry -inf: the first, as at::argmax
}

// For AVX-512, AVX2 and the baseline, picked at run time (as dotRowsF32).
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) std::int64_t argmaxRow(const float *row,
                                                                                        std::int64_t n)
{
    return argmaxRowBody(row, n);
}

__attribute__((target_clones("avx512f", "avx2,fma", "default"))) std::int64_t argmaxRow(const Bf16 *row,
                                                                                        std::int64_t n)
{
    return argmaxRowBody(row, n);
}

} // namespace

at::Tensor argmaxRowsCpu(const at::Tensor &logits)
{
    TORCH_CHECK(cpuFused(logits) && logits.dim() == 2 && logits.is_contiguous() && logits.size(1) > 0,
                "argmax_rows: logits must be contiguous [rows, vocab > 0] on the CPU");
    const std::int64_t rows = logits.size(0), n = logits.size(1);
    at::Tensor out = at::empty({rows}, logits.options().dtype(at::kLong));
    std::int64_t *op = out.data_ptr<std::int64_t>();
    dispatchFused(logits.scalar_type(), [&](auto tag) {
        using scalar_t = decltype(tag);
        const scalar_t *lp = logits.data_ptr<scalar_t>();
        cpuParallel(rows, grainRows(n), [&](std::int64_t b, std::int64_t e) {
            for (std::int64_t r = b; r < e; ++r)
                op[r] = argmaxRow(lp + r * n, n);
        });
    });
    return out;
}

} // namespace bp
