#include "kv_pool.h"

#include "cuda_support.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace bp {

namespace {

std::string mib(double bytes)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / double(1 << 20));
    return buf;
}

} // namespace

std::int64_t cpuKvSpace()
{
    if (const char *env = std::getenv("BATCHPILOT_CPU_KV_SPACE"); env && *env) {
        char *end = nullptr;
        const double gib = std::strtod(env, &end);
        if (end != env && *end == '\0' && gib > 0)
            return std::int64_t(gib * double(std::int64_t(1) << 30));
    }
    return kCpuKvCap;
}

Result<std::unique_ptr<KvPool>> KvPool::create(const KvPoolShape &shape, const KvPoolRequest &request,
                                               const at::Device &device, int maxSequenceTokens,
                                               std::int64_t measuredBlocks)
{
    if (request.blockTokens < 1)
        return Status(StatusCode::InvalidArgument, "KV block size must be at least 1 token");
    if (request.tokens < 0)
        return Status(StatusCode::InvalidArgument, "kv_cache_tokens must not be negative");
    if (request.tokens == 0 && !(request.memoryFraction > 0 && request.memoryFraction <= 1))
        return Status(StatusCode::InvalidArgument, "kv_memory_fraction must be in (0, 1]");
    const std::int64_t perToken = shape.bytesPerToken();
    const std::int64_t perBlock = perToken * request.blockTokens;
    std::int64_t blocks = 0;
    std::string sizing;
    if (measuredBlocks > 0) {
        blocks = measuredBlocks; // the caller sized it (PagedDecoder, after a warm-up)
    } else if (request.tokens > 0) {
        // Whole blocks, rounded down: the scheduler's books (whole blocks under
        // kv_cache_tokens) and the pool then hold the same number of tokens.
        blocks = request.tokens / request.blockTokens;
        if (blocks < 1)
            return Status(StatusCode::InvalidArgument, "kv_cache_tokens " + std::to_string(request.tokens) +
                                                           " holds no whole KV block of " +
                                                           std::to_string(request.blockTokens) + " tokens");
        sizing = "kv_cache_tokens";
    } else if (device.is_cpu()) {
        // The CPU: what the engine's sequences can use (each at the model's
        // full length), within the fraction of available memory and the
        // BATCHPILOT_CPU_KV_SPACE cap; not gigabytes a small model never
        // touches.
        const std::int64_t space = cpuKvSpace();
        const std::int64_t memory =
            std::min(std::int64_t(double(freeDeviceMemory(device)) * request.memoryFraction), space);
        blocks = memory / perBlock - 1;
        sizing = "at most " + mib(double(space)) + " (BATCHPILOT_CPU_KV_SPACE)";
        if (request.sequences > 0 && maxSequenceTokens > 0) {
            const std::int64_t perSequence =
                (maxSequenceTokens + request.blockTokens - 1) / request.blockTokens;
            const std::int64_t useful = std::int64_t(request.sequences) * perSequence;
            if (useful <= blocks) {
                blocks = useful;
                sizing = "for " + std::to_string(request.sequences) + " sequences of " +
                         std::to_string(maxSequenceTokens) + " tokens";
            }
        }
        if (blocks < 1)
            return Status(StatusCode::ResourceExhausted,
                          "no room for a KV cache on the CPU: " + mib(double(memory)) +
                              " may be used, one block of " + std::to_string(request.blockTokens) +
                              " tokens takes " + mib(double(perBlock)));
    } else {
        const std::int64_t free = freeDeviceMemory(device);
        blocks = std::int64_t(double(free) * request.memoryFraction) / perBlock - 1;
        sizing =
            "kv_memory_fraction " + std::to_string(request.memoryFraction).substr(0, 4) + " of free memory";
        if (blocks < 1)
            return Status(StatusCode::ResourceExhausted, "no room for a KV cache on " + device.str() + ": " +
                                                             mib(double(free)) + " free, one block of " +
                                                             std::to_string(request.blockTokens) +
                                                             " tokens takes " + mib(double(perBlock)));
    }
    const std::int64_t slots = (blocks + 1) * request.blockTokens; // + the scratch block
    const std::int64_t need = slots * perToken;
    at::Tensor storage;
    try {
        storage = at::empty({shape.layers, 2, shape.kvHeads, blocks + 1, request.blockTokens, shape.headDim},
                            at::TensorOptions().dtype(shape.dtype).device(device));
    } catch (const std::exception &) {
        return Status(StatusCode::ResourceExhausted,
                      "the KV cache of " + std::to_string(blocks * request.blockTokens) + " tokens needs " +
                          mib(double(need)) + " on " + device.str() + ", " +
                          mib(double(freeDeviceMemory(device))) +
                          " free: lower kv_cache_tokens or "
                          "kv_memory_fraction");
    }
    auto pool = std::unique_ptr<KvPool>(new KvPool(shape, request, blocks, std::move(storage)));
    pool->m_sizing = std::move(sizing);
    return pool;
}

KvPool::KvPool(const KvPoolShape &shape, const KvPoolRequest &request, std::int64_t blocks,
               at::Tensor storage)
    : m_shape(shape), m_request(request), m_books(blocks, request.blockTokens, 1),
      m_storage(std::move(storage))
{
    for (int l = 0; l < shape.layers; ++l) {
        m_keys.push_back(m_storage.select(0, l).select(0, 0));
        m_values.push_back(m_storage.select(0, l).select(0, 1));
    }
}

std::string KvPool::describe() const
{
    return std::to_string(capacityTokens()) + " tokens (" + std::to_string(m_books.totalBlocks()) +
           " blocks of " + std::to_string(blockTokens()) + "), " + mib(double(bytes())) + " " +
           std::string(c10::toString(m_shape.dtype)) + " on " + m_storage.device().str() +
           (m_sizing.empty() ? std::string() : ", sized " + m_sizing);
}

} // namespace bp
