#include "paged_attention.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#ifdef BATCHPILOT_TORCH_CUDA
#include "paged_attention_cuda.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace bp {

namespace {

void checkWriteKv(const at::Tensor &kPool, const at::Tensor &vPool, const at::Tensor &k, const at::Tensor &v,
                  const at::Tensor &slots)
{
    TORCH_CHECK(kPool.dim() == 3 && vPool.sizes() == kPool.sizes() && kPool.is_contiguous() &&
                    vPool.is_contiguous(),
                "write_kv: the pools must be contiguous [slots, kv_heads, head_dim]");
    TORCH_CHECK(k.dim() == 3 && v.sizes() == k.sizes() && k.size(1) == kPool.size(1) && k.size(2) == kPool.size(2),
                "write_kv: k and v must be [tokens, kv_heads, head_dim] of the pool's heads and head_dim");
    TORCH_CHECK(k.stride(2) == 1 && k.stride(1) == k.size(2) && v.stride(2) == 1 && v.stride(1) == v.size(2),
                "write_kv: each row of k and v must be contiguous");
    TORCH_CHECK(k.scalar_type() == kPool.scalar_type() && v.scalar_type() == kPool.scalar_type(),
                "write_kv: k and v must have the pool's dtype");
    TORCH_CHECK(slots.scalar_type() == at::kInt && slots.dim() == 1 && slots.size(0) == k.size(0) &&
                    slots.is_contiguous(),
                "write_kv: slots must be int32 [tokens]");
}

void checkAttention(const at::Tensor &q, const at::Tensor &kPool, const at::Tensor &vPool,
                    const at::Tensor &blockTables, const at::Tensor &querySeq, const at::Tensor &positions,
                    std::int64_t blockTokens)
{
    TORCH_CHECK(q.dim() == 3 && q.stride(2) == 1 && q.stride(1) == q.size(2),
                "paged_attention: q must be [tokens, heads, head_dim] with each row's heads contiguous");
    TORCH_CHECK(kPool.dim() == 3 && vPool.sizes() == kPool.sizes() && kPool.is_contiguous() &&
                    vPool.is_contiguous() && kPool.size(2) == q.size(2),
                "paged_attention: the pools must be contiguous [slots, kv_heads, head_dim] of q's head_dim");
    TORCH_CHECK(kPool.size(1) > 0 && q.size(1) % kPool.size(1) == 0,
                "paged_attention: heads must be a multiple of kv_heads");
    TORCH_CHECK(kPool.scalar_type() == q.scalar_type() && vPool.scalar_type() == q.scalar_type(),
                "paged_attention: q and the pools must have one dtype");
    TORCH_CHECK(blockTables.scalar_type() == at::kInt && blockTables.dim() == 2 && blockTables.is_contiguous(),
                "paged_attention: block_tables must be contiguous int32 [sequences, width]");
    for (const at::Tensor *t : {&querySeq, &positions})
        TORCH_CHECK(t->scalar_type() == at::kInt && t->dim() == 1 && t->size(0) == q.size(0) && t->is_contiguous(),
                    "paged_attention: query_seq and positions must be int32 [tokens]");
    TORCH_CHECK(blockTokens > 0, "paged_attention: block_tokens must be positive");
}

void writeKvCpu(at::Tensor &kPool, at::Tensor &vPool, const at::Tensor &k, const at::Tensor &v,
                const at::Tensor &slots)
{
    checkWriteKv(kPool, vPool, k, v, slots);
    const std::int64_t T = k.size(0), width = k.size(1) * k.size(2), slotCount = kPool.size(0);
    const std::size_t bytes = std::size_t(width) * k.element_size();
    const auto *slot = slots.data_ptr<std::int32_t>();
    auto *kd = static_cast<char *>(kPool.data_ptr());
    auto *vd = static_cast<char *>(vPool.data_ptr());
    const auto *ks = static_cast<const char *>(k.data_ptr());
    const auto *vs = static_cast<const char *>(v.data_ptr());
    const std::int64_t kStride = k.stride(0) * k.element_size(), vStride = v.stride(0) * v.element_size();
    for (std::int64_t t = 0; t < T; ++t) {
        TORCH_CHECK(slot[t] >= 0 && slot[t] < slotCount, "write_kv: slot ", slot[t], " outside the pool");
        std::memcpy(kd + std::int64_t(slot[t]) * std::int64_t(bytes), ks + t * kStride, bytes);
        std::memcpy(vd + std::int64_t(slot[t]) * std::int64_t(bytes), vs + t * vStride, bytes);
    }
}

// One (query token, head): the same online softmax as the CUDA kernel, over
// the keys in position order.
template <class T>
void attendOne(const T *q, const T *kPool, const T *vPool, const std::int32_t *table, std::int64_t context,
               std::int64_t blockTokens, std::int64_t rowStride, std::int64_t D, float scale, float *acc, T *out)
{
    float m = -std::numeric_limits<float>::infinity(), l = 0.f;
    std::fill(acc, acc + D, 0.f);
    for (std::int64_t p = 0; p < context; ++p) {
        const std::int64_t slot = std::int64_t(table[p / blockTokens]) * blockTokens + p % blockTokens;
        const T *k = kPool + slot * rowStride;
        float dot = 0.f;
        for (std::int64_t e = 0; e < D; ++e)
            dot += float(q[e]) * float(k[e]);
        const float s = dot * scale;
        const float mNew = std::max(m, s);
        const float c = std::exp(m - mNew), w = std::exp(s - mNew);
        l = l * c + w;
        const T *v = vPool + slot * rowStride;
        for (std::int64_t e = 0; e < D; ++e)
            acc[e] = acc[e] * c + w * float(v[e]);
        m = mNew;
    }
    for (std::int64_t e = 0; e < D; ++e)
        out[e] = T(acc[e] / l);
}

at::Tensor pagedAttentionCpu(const at::Tensor &q, const at::Tensor &kPool, const at::Tensor &vPool,
                             const at::Tensor &blockTables, const at::Tensor &querySeq, const at::Tensor &positions,
                             std::int64_t blockTokens, double scale)
{
    checkAttention(q, kPool, vPool, blockTables, querySeq, positions, blockTokens);
    const std::int64_t T = q.size(0), H = q.size(1), D = q.size(2), Hkv = kPool.size(1);
    const std::int64_t group = H / Hkv, width = blockTables.size(1), slots = kPool.size(0);
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
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, q.scalar_type(), "paged_attention", [&] {
        const auto *qp = q.data_ptr<scalar_t>();
        const auto *kp = kPool.data_ptr<scalar_t>();
        const auto *vp = vPool.data_ptr<scalar_t>();
        auto *op = out.data_ptr<scalar_t>();
        const std::int64_t qRow = q.stride(0), rowStride = Hkv * D;
        // Grain: a few (token, head) pairs per task; each is a context's worth of work.
        at::parallel_for(0, T * H, 4, [&](std::int64_t begin, std::int64_t end) {
            std::vector<float> acc(static_cast<std::size_t>(D));
            for (std::int64_t i = begin; i < end; ++i) {
                const std::int64_t t = i / H, h = i % H;
                attendOne(qp + t * qRow + h * D, kp + (h / group) * D, vp + (h / group) * D,
                          tables + seq[t] * width, std::int64_t(pos[t]) + 1, blockTokens, rowStride, D,
                          float(scale), acc.data(), op + (t * H + h) * D);
            }
        });
    });
    return out;
}

#ifdef BATCHPILOT_TORCH_CUDA
kernels::Element elementOf(const at::Tensor &t)
{
    switch (t.scalar_type()) {
    case at::kFloat: return kernels::Element::Float32;
    case at::kBFloat16: return kernels::Element::BFloat16;
    case at::kHalf: return kernels::Element::Float16;
    default: TORCH_CHECK(false, "paged attention: unsupported dtype ", t.scalar_type());
    }
}

void writeKvCuda(at::Tensor &kPool, at::Tensor &vPool, const at::Tensor &k, const at::Tensor &v,
                 const at::Tensor &slots)
{
    checkWriteKv(kPool, vPool, k, v, slots);
    const c10::cuda::CUDAGuard guard(kPool.device());
    kernels::WriteKvArgs a;
    a.k = k.data_ptr();
    a.kRowStride = k.stride(0);
    a.v = v.data_ptr();
    a.vRowStride = v.stride(0);
    a.kPool = kPool.data_ptr();
    a.vPool = vPool.data_ptr();
    a.slots = slots.data_ptr<std::int32_t>();
    a.tokens = k.size(0);
    a.width = int(k.size(1) * k.size(2));
    kernels::launchWriteKv(a, elementOf(k), c10::cuda::getCurrentCUDAStream(kPool.device().index()).stream());
}

at::Tensor pagedAttentionCuda(const at::Tensor &q, const at::Tensor &kPool, const at::Tensor &vPool,
                              const at::Tensor &blockTables, const at::Tensor &querySeq, const at::Tensor &positions,
                              std::int64_t blockTokens, double scale)
{
    checkAttention(q, kPool, vPool, blockTables, querySeq, positions, blockTokens);
    TORCH_CHECK(kernels::cudaAttentionSupports(int(q.size(2))), "paged_attention: no CUDA kernel for head_dim ",
                q.size(2), " (built for 32, 64, 96, 128, 256)");
    const c10::cuda::CUDAGuard guard(q.device());
    at::Tensor out = at::empty({q.size(0), q.size(1), q.size(2)}, q.options());
    kernels::AttentionArgs a;
    a.q = q.data_ptr();
    a.qRowStride = q.stride(0);
    a.kPool = kPool.data_ptr();
    a.vPool = vPool.data_ptr();
    a.blockTables = blockTables.data_ptr<std::int32_t>();
    a.tableStride = blockTables.size(1);
    a.querySeq = querySeq.data_ptr<std::int32_t>();
    a.positions = positions.data_ptr<std::int32_t>();
    a.out = out.data_ptr();
    a.tokens = q.size(0);
    a.heads = int(q.size(1));
    a.kvHeads = int(kPool.size(1));
    a.headDim = int(q.size(2));
    a.blockTokens = int(blockTokens);
    a.scale = float(scale);
    kernels::launchPagedAttention(a, elementOf(q), c10::cuda::getCurrentCUDAStream(q.device().index()).stream());
    return out;
}
#endif

} // namespace

TORCH_LIBRARY(batchpilot, m)
{
    m.def("write_kv(Tensor(a!) k_pool, Tensor(b!) v_pool, Tensor k, Tensor v, Tensor slots) -> ()");
    m.def("paged_attention(Tensor q, Tensor k_pool, Tensor v_pool, Tensor block_tables, Tensor query_seq, "
          "Tensor positions, int block_tokens, float scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(batchpilot, CPU, m)
{
    m.impl("write_kv", &writeKvCpu);
    m.impl("paged_attention", &pagedAttentionCpu);
}

#ifdef BATCHPILOT_TORCH_CUDA
TORCH_LIBRARY_IMPL(batchpilot, CUDA, m)
{
    m.impl("write_kv", &writeKvCuda);
    m.impl("paged_attention", &pagedAttentionCuda);
}
#endif

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
                          const at::Tensor &blockTables, const at::Tensor &querySeq, const at::Tensor &positions,
                          std::int64_t blockTokens, double scale)
{
    static const auto op = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("batchpilot::paged_attention", "")
                               .typed<at::Tensor(const at::Tensor &, const at::Tensor &, const at::Tensor &,
                                                 const at::Tensor &, const at::Tensor &, const at::Tensor &,
                                                 std::int64_t, double)>();
    return op.call(q, kPool, vPool, blockTables, querySeq, positions, blockTokens, scale);
}

bool pagedAttentionHasCuda()
{
#ifdef BATCHPILOT_TORCH_CUDA
    return true;
#else
    return false;
#endif
}

} // namespace bp
