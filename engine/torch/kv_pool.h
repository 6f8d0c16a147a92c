// The device-resident KV cache of a paged decoder: one allocation holding,
// for every layer, a key pool and a value pool of [kvHeads, blocks,
// blockTokens, headDim] (a head's block is one contiguous run of
// blockTokens × headDim), blocks whose books KvBlockPool keeps
// (engine/model/kv_block_pool.h). Sized once, when an engine starts on the
// model (Backend::prepareKv), from kv_cache_tokens or, at 0:
//  - CUDA: the device's free memory times continuous.kv_memory_fraction
//    (cuda_support.h, freeDeviceMemory);
//  - the CPU: what the engine's sequences can use (KvPoolRequest::sequences
//    of the model's full length), within kv_memory_fraction of available
//    memory and BATCHPILOT_CPU_KV_SPACE GiB (default 4, vLLM's
//    VLLM_CPU_KVCACHE_SPACE), so that a small model does not reserve
//    gigabytes. describe() (the start-up log line) says which bound sized it.
//
// Block 0 is scratch, never handed out: the padded rows of a CUDA-graph
// decode step write their keys and values there.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include "engine/core/result.h"
#include "engine/model/backend.h"
#include "engine/model/kv_block_pool.h"

#include <ATen/ATen.h>

#include <memory>
#include <string>

namespace bp {

struct KvPoolShape {
    int layers = 0;
    int kvHeads = 0;
    int headDim = 0;
    at::ScalarType dtype = at::kFloat;
    // Bytes one token's keys and values take over all layers.
    std::int64_t bytesPerToken() const
    {
        return std::int64_t(layers) * 2 * kvHeads * headDim * std::int64_t(c10::elementSize(dtype));
    }
};

class KvPool {
public:
    // ResourceExhausted naming the bytes asked and free when the pool does not
    // fit; InvalidArgument for a request out of range.
    // `maxSequenceTokens`: the model's length (the CPU's sizing; 0: unknown).
    // `measuredBlocks` > 0: that many blocks, sized by the caller (a CUDA
    // pool after a warm-up, PagedDecoder), `request` kept as asked.
    static Result<std::unique_ptr<KvPool>> create(const KvPoolShape &shape, const KvPoolRequest &request,
                                                  const at::Device &device, int maxSequenceTokens = 0,
                                                  std::int64_t measuredBlocks = 0);

    KvBlockPool &books() { return m_books; }
    const KvBlockPool &books() const { return m_books; }
    const KvPoolShape &shape() const { return m_shape; }
    const KvPoolRequest &request() const { return m_request; }
    int blockTokens() const { return m_books.blockTokens(); }
    // Usable slots (the scratch block left out).
    std::int64_t capacityTokens() const { return m_books.totalBlocks() * m_books.blockTokens(); }
    std::int64_t bytes() const { return m_storage.numel() * std::int64_t(m_storage.element_size()); }
    // Layer `layer`'s pools, [kvHeads, blocks, blockTokens, headDim] (views of
    // one allocation): a head's rows of consecutive blocks are contiguous.
    at::Tensor &keys(int layer) { return m_keys[std::size_t(layer)]; }
    at::Tensor &values(int layer) { return m_values[std::size_t(layer)]; }
    void setSizing(std::string sizing) { m_sizing = std::move(sizing); }
    // "8192 tokens (512 blocks of 16), 96.0 MiB BFloat16 on cuda:0, sized
    // kv_memory_fraction 0.90 of free memory"
    std::string describe() const;

private:
    KvPool(const KvPoolShape &shape, const KvPoolRequest &request, std::int64_t blocks, at::Tensor storage);

    KvPoolShape m_shape;
    KvPoolRequest m_request;
    KvBlockPool m_books;
    at::Tensor m_storage; // [layers, 2, kvHeads, blocks, blockTokens, headDim]
    std::vector<at::Tensor> m_keys, m_values;
    std::string m_sizing; // which bound sized it, for describe()
};

// The CPU pool's cap: BATCHPILOT_CPU_KV_SPACE (GiB, > 0), else kCpuKvCap.
std::int64_t cpuKvSpace();

} // namespace bp
