// Paged attention on the GPU: one launch per layer per step for every query
// token of every sequence in it (prefill chunks and decode tokens alike),
// reading keys and values straight from the KV pool through each sequence's
// block table. docs/architecture.md, "The GPU step", says why a kernel of our
// own rather than libtorch's attention ops.
//
// One thread block per (query token, head): kWarps warps split the token's
// context into contiguous spans; each warp walks its span kUnroll keys at a
// time (their loads in flight together), every lane holding headDim / 32
// elements of the query, the accumulator and each key and value row; a key's
// score is a warp-wide sum. Softmax is online (running max and sum), so a
// context of any length needs no buffer of scores; the warps' partial
// results are merged through shared memory at the end. All arithmetic is in
// float, whatever the storage type.
//
// The same query over the same keys takes the same path whatever else is in
// the step, so a sequence's attention does not depend on its company.
#include "paged_attention_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace bp::kernels {

namespace {

constexpr int kWarps = 8;
constexpr int kUnroll = 4;

__device__ __forceinline__ float toFloat(float x)
{
    return x;
}
__device__ __forceinline__ float toFloat(__nv_bfloat16 x)
{
    return __bfloat162float(x);
}
__device__ __forceinline__ float toFloat(__half x)
{
    return __half2float(x);
}

template <class T> __device__ __forceinline__ T fromFloat(float x);
template <> __device__ __forceinline__ float fromFloat<float>(float x)
{
    return x;
}
template <> __device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x)
{
    return __float2bfloat16(x);
}
template <> __device__ __forceinline__ __half fromFloat<__half>(float x)
{
    return __float2half(x);
}

__device__ __forceinline__ float warpSum(float v)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

template <class T, int EPL>
__global__ void __launch_bounds__(kWarps * 32) pagedAttentionKernel(AttentionArgs a)
{
    constexpr int D = EPL * 32;
    const long long token = blockIdx.x;
    const int head = blockIdx.y;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvHead = head / (a.heads / a.kvHeads);
    const int seq = a.querySeq[token];
    const int context = a.positions[token] + 1;
    const int B = a.blockTokens;
    const int *table = a.blockTables + (long long)seq * a.tableStride;

    const T *q = static_cast<const T *>(a.q) + token * a.qRowStride + (long long)head * D + lane * EPL;
    float qv[EPL];
#pragma unroll
    for (int e = 0; e < EPL; ++e)
        qv[e] = toFloat(q[e]) * a.scale;

    // [kvHeads, blocks, B, D]: row of position p = ((kvHead * blocks + block) * B + p % B) * D
    const T *kBase = static_cast<const T *>(a.kPool) + lane * EPL;
    const T *vBase = static_cast<const T *>(a.vPool) + lane * EPL;

    float m = -INFINITY, l = 0.f, acc[EPL];
#pragma unroll
    for (int e = 0; e < EPL; ++e)
        acc[e] = 0.f;

    const int span = (context + kWarps - 1) / kWarps;
    const int begin = warp * span;
    const int end = min(context, begin + span);
    for (int p0 = begin; p0 < end; p0 += kUnroll) {
        long long slot[kUnroll];
        float s[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int p = min(p0 + u, end - 1); // past the span: a valid row, masked below
            slot[u] = ((long long)kvHead * a.blocks + table[p / B]) * B + p % B; // the row, in rows of D
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const T *k = kBase + slot[u] * D;
            float dot = 0.f;
#pragma unroll
            for (int e = 0; e < EPL; ++e)
                dot += qv[e] * toFloat(k[e]);
            s[u] = warpSum(dot);
        }
        float mNew = m;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
            if (p0 + u < end)
                mNew = fmaxf(mNew, s[u]);
        const float c = __expf(m - mNew); // 0 while m is -inf
        l *= c;
#pragma unroll
        for (int e = 0; e < EPL; ++e)
            acc[e] *= c;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (p0 + u >= end)
                continue;
            const float w = __expf(s[u] - mNew);
            l += w;
            const T *v = vBase + slot[u] * D;
#pragma unroll
            for (int e = 0; e < EPL; ++e)
                acc[e] += w * toFloat(v[e]);
        }
        m = mNew;
    }

    __shared__ float sMax[kWarps], sSum[kWarps];
    __shared__ float sAcc[kWarps][D];
    if (lane == 0) {
        sMax[warp] = m;
        sSum[warp] = l;
    }
#pragma unroll
    for (int e = 0; e < EPL; ++e)
        sAcc[warp][lane * EPL + e] = acc[e];
    __syncthreads();
    T *out = static_cast<T *>(a.out) + (token * a.heads + head) * D;
    for (int d = threadIdx.x; d < D; d += blockDim.x) {
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < kWarps; ++w)
            if (sSum[w] > 0.f)
                M = fmaxf(M, sMax[w]);
        float L = 0.f, o = 0.f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w)
            if (sSum[w] > 0.f) {
                const float f = __expf(sMax[w] - M);
                L += sSum[w] * f;
                o += sAcc[w][d] * f;
            }
        out[d] = fromFloat<T>(o / L);
    }
}

template <class T> __global__ void writeKvKernel(WriteKvArgs a)
{
    const long long token = blockIdx.x;
    const long long slot = a.slots[token];
    const long long block = slot / a.blockTokens, offset = slot % a.blockTokens;
    const T *k = static_cast<const T *>(a.k) + token * a.kRowStride;
    const T *v = static_cast<const T *>(a.v) + token * a.vRowStride;
    const int D = a.headDim, width = a.kvHeads * D;
    for (int i = threadIdx.x; i < width; i += blockDim.x) {
        const int h = i / D, e = i % D;
        const long long at = (((long long)h * a.blocks + block) * a.blockTokens + offset) * D + e;
        static_cast<T *>(a.kPool)[at] = k[i];
        static_cast<T *>(a.vPool)[at] = v[i];
    }
}

void check(cudaError_t error, const char *what)
{
    if (error != cudaSuccess)
        throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(error));
}

template <class T> void attention(const AttentionArgs &a, cudaStream_t stream)
{
    const dim3 grid(unsigned(a.tokens), unsigned(a.heads));
    const dim3 block(kWarps * 32);
    switch (a.headDim) {
    case 32: pagedAttentionKernel<T, 1><<<grid, block, 0, stream>>>(a); break;
    case 64: pagedAttentionKernel<T, 2><<<grid, block, 0, stream>>>(a); break;
    case 96: pagedAttentionKernel<T, 3><<<grid, block, 0, stream>>>(a); break;
    case 128: pagedAttentionKernel<T, 4><<<grid, block, 0, stream>>>(a); break;
    case 256: pagedAttentionKernel<T, 8><<<grid, block, 0, stream>>>(a); break;
    default:
        throw std::runtime_error("paged attention: no CUDA kernel for head size " +
                                 std::to_string(a.headDim));
    }
}

} // namespace

void launchPagedAttention(const AttentionArgs &a, Element element, void *stream)
{
    if (a.tokens <= 0)
        return;
    const auto s = static_cast<cudaStream_t>(stream);
    switch (element) {
    case Element::Float32: attention<float>(a, s); break;
    case Element::BFloat16: attention<__nv_bfloat16>(a, s); break;
    case Element::Float16: attention<__half>(a, s); break;
    }
    check(cudaGetLastError(), "paged attention launch");
}

void launchWriteKv(const WriteKvArgs &a, Element element, void *stream)
{
    if (a.tokens <= 0)
        return;
    const auto s = static_cast<cudaStream_t>(stream);
    const dim3 grid(unsigned(a.tokens));
    const dim3 block(128);
    switch (element) {
    case Element::Float32: writeKvKernel<float><<<grid, block, 0, s>>>(a); break;
    case Element::BFloat16: writeKvKernel<__nv_bfloat16><<<grid, block, 0, s>>>(a); break;
    case Element::Float16: writeKvKernel<__half><<<grid, block, 0, s>>>(a); break;
    }
    check(cudaGetLastError(), "KV write launch");
}

} // namespace bp::kernels
