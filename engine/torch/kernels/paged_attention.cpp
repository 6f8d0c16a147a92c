#include "paged_attention.h"
#include "paged_attention_checks.h"
#include "vec_math.h"

#include "../cpu_blas.h"
#include "../cpu_kernels.h"

#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace bp {

namespace {

void writeKvCpu(at::Tensor &kPool, at::Tensor &vPool, const at::Tensor &k, const at::Tensor &v,
                const at::Tensor &slots)
{
    checkWriteKv(kPool, vPool, k, v, slots);
    const std::int64_t T = k.size(0), Hkv = kPool.size(0), blocks = kPool.size(1), B = kPool.size(2),
                       D = kPool.size(3);
    const std::int64_t slotCount = blocks * B, es = k.element_size();
    const std::size_t row = std::size_t(D * es);
    const auto *slot = slots.data_ptr<std::int32_t>();
    auto *kd = static_cast<char *>(kPool.data_ptr());
    auto *vd = static_cast<char *>(vPool.data_ptr());
    const auto *ks = static_cast<const char *>(k.data_ptr());
    const auto *vs = static_cast<const char *>(v.data_ptr());
    const std::int64_t kStride = k.stride(0) * es, vStride = v.stride(0) * es;
    for (std::int64_t t = 0; t < T; ++t) {
        TORCH_CHECK(slot[t] >= 0 && slot[t] < slotCount, "write_kv: slot ", slot[t], " outside the pool");
        const std::int64_t block = slot[t] / B, offset = slot[t] % B;
        for (std::int64_t h = 0; h < Hkv; ++h) {
            const std::int64_t at = ((h * blocks + block) * B + offset) * D * es;
            std::memcpy(kd + at, ks + t * kStride + h * D * es, row);
            std::memcpy(vd + at, vs + t * vStride + h * D * es, row);
        }
    }
}

// The CPU kernel. Query tokens are taken in runs of one sequence at
// consecutive positions (how a step lays them out: a prefill chunk is one
// run, a decode token a run of one):
//  - a run of one: per head, its scores over the context (vectorised dot
//    products), the softmax, the weighted sum of the values;
//  - a longer run (a prefill chunk): per KV head, the context's keys and
//    values gathered out of the blocks once; per block of query tokens the
//    queries of the heads that share it stacked, two matrix products over the
//    keys the block sees (scores = Q·Kᵀ, out = P·V; cpu_blas) with the causal
//    mask and the softmax between them.
// All in float whatever the storage type. A run's result depends only on its
// own sequence's keys and on the run, never on the rest of the step.
template <class T> float toFloat(T x)
{
    return float(x);
}

// Multiply-adds of a step's q·k below which its attention runs on the
// calling thread (~10 microseconds of work).
constexpr std::int64_t kParallelAttentionWork = std::int64_t(1) << 15;

struct AttentionShape {
    std::int64_t H, Hkv, D, group, width, blockTokens, qRow, blocks;
    float scale = 1.f;
    std::int64_t window = 0; // keys a query sees (a sliding window), 0 = all before it
};

// The pool is [kv_heads, blocks, block_tokens, head_dim]: one head's rows of a
// block are contiguous, and of consecutive blocks too, so a head's walk over a
// sequence (whose blocks are mostly consecutive) is one stream.
template <class T>
const T *keyRow(const T *pool, const std::int32_t *table, std::int64_t p, const AttentionShape &a,
                std::int64_t kvHead)
{
    const std::int64_t block = table[p / a.blockTokens];
    return pool + ((kvHead * a.blocks + block) * a.blockTokens + p % a.blockTokens) * a.D;
}

// The inner loops of a decode row, compiled for AVX-512, AVX2 and the
// baseline and picked at run time (the build targets the baseline x86-64).
// out[r] = rows[r]·q for `n` contiguous rows of `d` floats.
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) void
dotRows(const float *rows, std::int64_t n, std::int64_t d, const float *q, float *out)
{
    for (std::int64_t r = 0; r < n; ++r) {
        const float *row = rows + r * d;
        float s = 0.f;
#pragma omp simd reduction(+ : s)
        for (std::int64_t e = 0; e < d; ++e)
            s += row[e] * q[e];
        out[r] = s;
    }
}
// acc += Σ_r w[r] · rows[r].
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) void
axpyRows(const float *rows, std::int64_t n, std::int64_t d, const float *w, float *acc)
{
    for (std::int64_t r = 0; r < n; ++r) {
        const float *row = rows + r * d;
        const float wr = w[r];
#pragma omp simd
        for (std::int64_t e = 0; e < d; ++e)
            acc[e] += wr * row[e];
    }
}

// The softmax's passes over a row of scores (vec_math.h), compiled as above.
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) float rowMax(const float *row,
                                                                              std::int64_t n)
{
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (std::int64_t i = 0; i < n; ++i)
        m = row[i] > m ? row[i] : m;
    return m;
}
// row[i] = exp(row[i] - m); returns their sum.
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) float expShiftSum(float *row, std::int64_t n,
                                                                                   float m)
{
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t i = 0; i < n; ++i) {
        const float w = expVec(row[i] - m);
        row[i] = w;
        sum += w;
    }
    return sum;
}
__attribute__((target_clones("avx512f", "avx2,fma", "default"))) void scaleRow(float *row, std::int64_t n,
                                                                               float s)
{
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i)
        row[i] *= s;
}

// A block's rows of one head as float: the pool's own memory for float32,
// else converted into `buffer`.
template <class T> const float *asFloat(const T *rows, std::int64_t count, std::vector<float> &buffer)
{
    if constexpr (std::is_same_v<T, float>) {
        return rows;
    } else {
        buffer.resize(std::size_t(count));
        for (std::int64_t i = 0; i < count; ++i)
            buffer[std::size_t(i)] = toFloat(rows[i]);
        return buffer.data();
    }
}

// The first key position a query at `position` sees: 0, or with a sliding
// window of W keys the positions position - W + 1 .. position (transformers'
// sliding_window_overlay: kv > q - W).
std::int64_t firstKey(std::int64_t position, std::int64_t window)
{
    return window > 0 ? std::max<std::int64_t>(0, position + 1 - window) : 0;
}

// One query token, one head, over keys first .. context - 1: block by block
// (a head's rows of a block are contiguous), scores, softmax, the weighted
// sum of the values.
template <class T>
void attendOne(const T *q, const T *kPool, const T *vPool, const std::int32_t *table, std::int64_t first,
               std::int64_t context, const AttentionShape &a, std::int64_t head, std::vector<float> &scores,
               std::vector<float> &acc, std::vector<float> &convert, T *out)
{
    const std::int64_t D = a.D, kvHead = head / a.group, B = a.blockTokens, keys = context - first;
    scores.resize(std::size_t(keys));
    float qf[512];
    for (std::int64_t e = 0; e < D; ++e)
        qf[e] = toFloat(q[e]) * a.scale;
    for (std::int64_t p = first; p < context;) {
        const std::int64_t n = std::min(B - p % B, context - p); // to the end of p's block
        dotRows(asFloat(keyRow(kPool, table, p, a, kvHead), n * D, convert), n, D, qf,
                scores.data() + (p - first));
        p += n;
    }
    const float m = rowMax(scores.data(), keys);
    const float sum = expShiftSum(scores.data(), keys, m);
    acc.assign(std::size_t(D), 0.f);
    for (std::int64_t p = first; p < context;) {
        const std::int64_t n = std::min(B - p % B, context - p);
        axpyRows(asFloat(keyRow(vPool, table, p, a, kvHead), n * D, convert), n, D,
                 scores.data() + (p - first), acc.data());
        p += n;
    }
    const float inv = 1.f / sum;
    for (std::int64_t e = 0; e < D; ++e)
        out[e] = T(acc[std::size_t(e)] * inv);
}

// Query tokens of a long run taken together: enough rows that the two
// products run as GEMMs, few enough that a block's scores (group x 64 rows
// by the keys up to its last token) stay in the cache, and that a causal
// run's products skip most of the keys its early tokens cannot see (a
// 1,024-token prefill computes ~53 % of the full square, not all of it).
constexpr std::int64_t kQueryBlock = 64;

// A run of n query tokens of one sequence at positions first .. first+n-1,
// one KV head and the query heads that share it: the context's keys and
// values gathered once, then per block of query tokens the group's queries
// stacked into one matrix and two products over the keys the block sees
// (not per query head). With a sliding window only the keys the block's
// first query sees onwards enter, and each row is masked to its own window.
template <class T>
void attendRun(const T *q, const T *kPool, const T *vPool, const std::int32_t *table, std::int64_t first,
               std::int64_t n, const AttentionShape &a, std::int64_t kvHead, std::vector<float> &scratch,
               T *out)
{
    const std::int64_t D = a.D, lo = firstKey(first, a.window), context = first + n - lo, G = a.group,
                       blockRows = G * std::min(n, kQueryBlock);
    scratch.resize(std::size_t(2 * context * D + blockRows * D + blockRows * context + blockRows * D));
    float *K = scratch.data(), *V = K + context * D, *Q = V + context * D, *S = Q + blockRows * D,
          *O = S + blockRows * context;
    for (std::int64_t p = 0; p < context; ++p) {
        const T *k = keyRow(kPool, table, lo + p, a, kvHead), *v = keyRow(vPool, table, lo + p, a, kvHead);
        for (std::int64_t e = 0; e < D; ++e) {
            K[p * D + e] = toFloat(k[e]);
            V[p * D + e] = toFloat(v[e]);
        }
    }
    for (std::int64_t i0 = 0; i0 < n; i0 += kQueryBlock) {
        const std::int64_t bn = std::min(kQueryBlock, n - i0), rows = G * bn;
        // the keys [k0, k1) that some query of the block sees (indices into K)
        const std::int64_t k0 = firstKey(first + i0, a.window) - lo, k1 = first + i0 + bn - lo,
                           keys = k1 - k0;
        // row g * bn + i: query head kvHead * G + g, token i0 + i
        for (std::int64_t g = 0; g < G; ++g)
            for (std::int64_t i = 0; i < bn; ++i)
                for (std::int64_t e = 0; e < D; ++e)
                    Q[(g * bn + i) * D + e] =
                        toFloat(q[(i0 + i) * a.qRow + (kvHead * G + g) * D + e]) * a.scale;
        sgemmNT(int(rows), int(keys), int(D), Q, int(D), K + k0 * D, int(D), S, int(keys));
        for (std::int64_t r = 0; r < rows; ++r) {
            float *row = S + r * keys;
            // causal: keys up to its own position; windowed: from firstKey on
            const std::int64_t position = first + i0 + r % bn, from = firstKey(position, a.window) - lo - k0,
                               allowed = position - lo + 1 - k0;
            const float m = rowMax(row + from, allowed - from);
            scaleRow(row + from, allowed - from, 1.f / expShiftSum(row + from, allowed - from, m));
            std::fill(row, row + from, 0.f);
            std::fill(row + allowed, row + keys, 0.f);
        }
        sgemmNN(int(rows), int(D), int(keys), S, int(keys), V + k0 * D, int(D), O, int(D));
        for (std::int64_t g = 0; g < G; ++g)
            for (std::int64_t i = 0; i < bn; ++i)
                for (std::int64_t e = 0; e < D; ++e)
                    out[((i0 + i) * a.H + kvHead * G + g) * D + e] = T(O[(g * bn + i) * D + e]);
    }
}

at::Tensor pagedAttentionCpu(const at::Tensor &q, const at::Tensor &kPool, const at::Tensor &vPool,
                             const at::Tensor &blockTables, const at::Tensor &querySeq,
                             const at::Tensor &positions, std::int64_t blockTokens, double scale,
                             std::int64_t window)
{
    checkAttention(q, kPool, vPool, blockTables, querySeq, positions, blockTokens);
    TORCH_CHECK(window >= 0, "paged_attention: window ", window, " is negative (0 = no window)");
    const std::int64_t T = q.size(0), H = q.size(1), D = q.size(2), Hkv = kPool.size(0);
    TORCH_CHECK(D <= 512, "paged_attention: head_dim ", D, " is above the CPU kernel's 512");
    const std::int64_t width = blockTables.size(1), slots = kPool.size(1) * blockTokens;
    at::Tensor out = at::empty({T, H, D}, q.options());
    const auto *seq = querySeq.data_ptr<std::int32_t>();
    const auto *pos = positions.data_ptr<std::int32_t>();
    const auto *tables = blockTables.data_ptr<std::int32_t>();
    for (std::int64_t t = 0; t < T; ++t) {
        TORCH_CHECK(seq[t] >= 0 && seq[t] < blockTables.size(0), "paged_attention: query_seq ", seq[t],
                    " outside block_tables");
        TORCH_CHECK(pos[t] >= 0 && (pos[t] / blockTokens) < width, "paged_attention: position ", pos[t],
                    " past the block table's width");
        const std::int32_t *table = tables + seq[t] * width;
        for (std::int64_t b = 0; b <= pos[t] / blockTokens; ++b)
            TORCH_CHECK(table[b] >= 0 && (table[b] + 1) * blockTokens <= slots, "paged_attention: block ",
                        table[b], " outside the pool");
    }
    // Runs: consecutive tokens of one sequence at consecutive positions.
    std::vector<std::pair<std::int64_t, std::int64_t>> runs; // (first token, count)
    for (std::int64_t t = 0; t < T;) {
        std::int64_t n = 1;
        while (t + n < T && seq[t + n] == seq[t] && pos[t + n] == pos[t] + n)
            ++n;
        runs.emplace_back(t, n);
        t += n;
    }
    AttentionShape a{H, Hkv, D, H / Hkv, width, blockTokens, q.stride(0), kPool.size(1)};
    a.scale = float(scale);
    a.window = window;
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, q.scalar_type(), "paged_attention", [&] {
        const auto *qp = q.data_ptr<scalar_t>();
        const auto *kp = kPool.data_ptr<scalar_t>();
        const auto *vp = vPool.data_ptr<scalar_t>();
        auto *op = out.data_ptr<scalar_t>();
        // Tasks: (run, KV head) for runs of several tokens, (run, head) for single ones.
        std::vector<std::array<std::int64_t, 3>> tasks; // run, head (single) or KV head (run), kind
        for (std::size_t r = 0; r < runs.size(); ++r) {
            if (runs[r].second == 1)
                for (std::int64_t h = 0; h < H; ++h)
                    tasks.push_back({std::int64_t(r), h, 0});
            else
                for (std::int64_t g = 0; g < Hkv; ++g)
                    tasks.push_back({std::int64_t(r), g, 1});
        }
        // Split between the threads only where the work pays for a parallel
        // region (a few microseconds): a small model's decode step attends
        // over a few heads of a few dozen keys, cheaper than waking a thread.
        std::int64_t work = 0; // multiply-adds of q·k, roughly
        for (const auto &[r, h, kind] : tasks) {
            const auto [t0, n] = runs[std::size_t(r)];
            work +=
                kind == 0 ? (std::int64_t(pos[t0]) + 1) * D : n * (std::int64_t(pos[t0]) + n) * D * a.group;
        }
        const std::int64_t grain = work < kParallelAttentionWork ? std::int64_t(tasks.size()) : 1;
        cpuParallel(std::int64_t(tasks.size()), grain, [&](std::int64_t begin, std::int64_t end) {
            std::vector<float> scores, acc, convert;
            for (std::int64_t i = begin; i < end; ++i) {
                const auto [r, h, kind] = tasks[std::size_t(i)];
                const auto [t0, n] = runs[std::size_t(r)];
                const std::int32_t *table = tables + seq[t0] * width;
                if (kind == 0)
                    attendOne(qp + t0 * a.qRow + h * D, kp, vp, table, firstKey(pos[t0], window),
                              std::int64_t(pos[t0]) + 1, a, h, scores, acc, convert, op + (t0 * H + h) * D);
                else
                    attendRun(qp + t0 * a.qRow, kp, vp, table, std::int64_t(pos[t0]), n, a, h, scores,
                              op + t0 * H * D);
            }
        });
    });
    return out;
}

} // namespace

TORCH_LIBRARY(batchpilot, m)
{
    m.def("write_kv(Tensor(a!) k_pool, Tensor(b!) v_pool, Tensor k, Tensor v, Tensor slots) -> ()");
    m.def("paged_attention(Tensor q, Tensor k_pool, Tensor v_pool, Tensor block_tables, Tensor query_seq, "
          "Tensor positions, int block_tokens, float scale, int window=0) -> Tensor");
}

TORCH_LIBRARY_IMPL(batchpilot, CPU, m)
{
    m.impl("write_kv", &writeKvCpu);
    m.impl("paged_attention", &pagedAttentionCpu);
}

void writeKv(at::Tensor &kPool, at::Tensor &vPool, const at::Tensor &k, const at::Tensor &v,
             const at::Tensor &slots)
{
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("batchpilot::write_kv", "")
                               .typed<void(at::Tensor &, at::Tensor &, const at::Tensor &, const at::Tensor &,
                                           const at::Tensor &)>();
    op.call(kPool, vPool, k, v, slots);
}

at::Tensor pagedAttention(const at::Tensor &q, const at::Tensor &kPool, const at::Tensor &vPool,
                          const at::Tensor &blockTables, const at::Tensor &querySeq,
                          const at::Tensor &positions, std::int64_t blockTokens, double scale,
                          std::int64_t window)
{
    static const auto op =
        c10::Dispatcher::singleton()
            .findSchemaOrThrow("batchpilot::paged_attention", "")
            .typed<at::Tensor(const at::Tensor &, const at::Tensor &, const at::Tensor &, const at::Tensor &,
                              const at::Tensor &, const at::Tensor &, std::int64_t, double, std::int64_t)>();
    return op.call(q, kPool, vPool, blockTables, querySeq, positions, blockTokens, scale, window);
}

} // namespace bp
