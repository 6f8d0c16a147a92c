#include "dot_rows.h"

#include <cstring>

// GCC 12's AVX-512 headers seed "undefined" vectors from themselves
// (`__m256d __Y = __Y;`), which its own -Wuninitialized reports wherever the
// intrinsics inline (GCC bug 105593, fixed in GCC 13).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#define BP_AVX512 __attribute__((target("avx512f")))

#if defined(__GNUC__) && !defined(__clang__)
#define BP_UNROLL _Pragma("GCC unroll 16")
#else
#define BP_UNROLL _Pragma("unroll")
#endif

namespace bp {

namespace {

struct F32Rows {
    using T = float;
    BP_AVX512 static inline __m512 load(const float *p) { return _mm512_loadu_ps(p); }
    static inline float scalar(const float *p) { return *p; }
};

struct Bf16Rows {
    using T = std::uint16_t;
    BP_AVX512 static inline __m512 load(const std::uint16_t *p)
    {
        const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    static inline float scalar(const std::uint16_t *p)
    {
        const std::uint32_t bits = std::uint32_t(*p) << 16;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    }
};

// MR rows of x against NR weight rows (starting at w, each k long), summed
// into MR x NR registers over the 16-wide part of k; the rest of k in scalars.
template <int MR, int NR, class R>
BP_AVX512 inline void tile(const float *x, std::int64_t k, const typename R::T *w, float *y, std::int64_t ldy,
                           bool accumulate)
{
    __m512 acc[MR][NR];
    BP_UNROLL for (int i = 0; i < MR; ++i)
    {
        BP_UNROLL for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_setzero_ps();
    }
    std::int64_t e = 0;
    for (; e + 16 <= k; e += 16) {
        __m512 wv[NR];
        BP_UNROLL for (int j = 0; j < NR; ++j) wv[j] = R::load(w + j * k + e);
        BP_UNROLL for (int i = 0; i < MR; ++i)
        {
            const __m512 xv = _mm512_loadu_ps(x + i * k + e);
            BP_UNROLL for (int j = 0; j < NR; ++j) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
        }
    }
    for (int i = 0; i < MR; ++i)
        for (int j = 0; j < NR; ++j) {
            float s = _mm512_reduce_add_ps(acc[i][j]);
            for (std::int64_t t = e; t < k; ++t)
                s += x[i * k + t] * R::scalar(w + j * k + t);
            float *out = y + i * ldy + j;
            *out = accumulate ? *out + s : s;
        }
}

// NR weight rows against all m rows of x, four x rows at a time.
template <int NR, class R>
BP_AVX512 inline void rowsOfX(const float *x, std::int64_t m, std::int64_t k, const typename R::T *w,
                              float *y, std::int64_t ldy, bool accumulate)
{
    std::int64_t i = 0;
    for (; i + 4 <= m; i += 4)
        tile<4, NR, R>(x + i * k, k, w, y + i * ldy, ldy, accumulate);
    switch (m - i) {
    case 3: tile<3, NR, R>(x + i * k, k, w, y + i * ldy, ldy, accumulate); break;
    case 2: tile<2, NR, R>(x + i * k, k, w, y + i * ldy, ldy, accumulate); break;
    case 1: tile<1, NR, R>(x + i * k, k, w, y + i * ldy, ldy, accumulate); break;
    default: break;
    }
}

template <class R>
BP_AVX512 void dotRows(const float *x, std::int64_t m, std::int64_t k, const typename R::T *w,
                       std::int64_t n0, std::int64_t n1, float *y, std::int64_t ldy, bool accumulate)
{
    std::int64_t j = n0;
    if (m == 1) // one x row: eight weight rows in flight
        for (; j + 8 <= n1; j += 8)
            tile<1, 8, R>(x, k, w + j * k, y + j, ldy, accumulate);
    for (; j + 4 <= n1; j += 4)
        rowsOfX<4, R>(x, m, k, w + j * k, y + j, ldy, accumulate);
    for (; j < n1; ++j)
        rowsOfX<1, R>(x, m, k, w + j * k, y + j, ldy, accumulate);
}

} // namespace

bool dotRowsAvx512()
{
    static const bool has = __builtin_cpu_supports("avx512f");
    return has;
}

void dotRowsAvx512F32(const float *x, std::int64_t m, std::int64_t k, const float *w, std::int64_t n0,
                      std::int64_t n1, float *y, std::int64_t ldy, bool accumulate)
{
    dotRows<F32Rows>(x, m, k, w, n0, n1, y, ldy, accumulate);
}

void dotRowsAvx512Bf16(const float *x, std::int64_t m, std::int64_t k, const std::uint16_t *w,
                       std::int64_t n0, std::int64_t n1, float *y, std::int64_t ldy, bool accumulate)
{
    dotRows<Bf16Rows>(x, m, k, w, n0, n1, y, ldy, accumulate);
}

} // namespace bp

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
