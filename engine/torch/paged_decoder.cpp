#include "paged_decoder.h"

#include "engine/core/nvtx.h"
#include "torch_device.h"

#include <algorithm>
#include <cstdio>
#include <mutex>

namespace bp {

PagedDecoder::PagedDecoder(std::string name, const PagedTrunk &trunk, const KvPoolShape &shape,
                           int maxPositions, const at::Device &device, bool cudaGraphs)
    : m_name(std::move(name)), m_trunk(trunk), m_shape(shape), m_maxPositions(maxPositions), m_device(device),
      m_cudaGraphs(cudaGraphs)
{
}

namespace {

std::string mib(std::int64_t bytes)
{
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1 << 20));
    return buf;
}

} // namespace

Result<PagedDecoder::StepMemory> PagedDecoder::measureStepMemory(const KvPoolRequest &request)
{
    // A provisional pool just large enough for the largest step: kPrefillTokens
    // prompt tokens as sequences of at most the model's length.
    const std::int64_t B = request.blockTokens, total = kPrefillTokens;
    const std::int64_t perSeq = std::min<std::int64_t>(m_maxPositions, total);
    const std::int64_t sequences = (total + perSeq - 1) / perSeq, blocksPerSeq = (perSeq + B - 1) / B;
    KvPoolRequest provisional = request;
    provisional.tokens = sequences * blocksPerSeq * B;
    auto pool = KvPool::create(m_shape, provisional, m_device, m_maxPositions);
    if (!pool)
        return pool.status();
    auto blocks = (*pool)->books().allocate(sequences * blocksPerSeq);
    if (!blocks)
        return Status(StatusCode::Internal,
                      m_name + ": the warm-up's provisional KV pool is short of blocks");
    std::vector<PagedSequence> seqs(static_cast<std::size_t>(sequences));
    std::vector<TokenId> zeros(std::size_t(perSeq), 0);
    std::vector<PagedItem> items;
    for (std::int64_t i = 0; i < sequences; ++i) {
        seqs[std::size_t(i)].blocks.assign(blocks->begin() + i * blocksPerSeq,
                                           blocks->begin() + (i + 1) * blocksPerSeq);
        const std::int64_t n = std::min(perSeq, total - i * perSeq);
        items.push_back(
            {&seqs[std::size_t(i)], std::span<const TokenId>(zeros.data(), std::size_t(n)), true});
    }
    PagedRunner runner(m_trunk, **pool, m_device, m_maxPositions);
    StepMemory m;
    m.stepTokens = total;
    synchronize(m_device);
    resetPeakDeviceMemory(m_device);
    const std::int64_t allocated = peakAllocatedDeviceMemory(m_device); // the peak is now what is held
    (void)runner.run(items);
    m.activations = std::max<std::int64_t>(0, peakAllocatedDeviceMemory(m_device) - allocated);
    if (m_cudaGraphs) {
        const std::int64_t before = reservedDeviceMemory(m_device);
        try {
            (void)runner.captureGraphs(PagedRunner::kGraphBuckets.back());
            m.graphs = std::max<std::int64_t>(0, reservedDeviceMemory(m_device) - before);
        } catch (const std::exception &) {
            m.graphs = 0; // the real capture will fail the same way and say so
        }
    }
    (*pool)->books().unref(*blocks);
    return m;
}

Status PagedDecoder::makeLocked(const KvPoolRequest &request)
{
    // The old pool's memory goes back before the new one is sized.
    m_runner.reset();
    m_pool.reset();
    m_graphNote.clear();
    // On CUDA at kv_cache_tokens 0 the pool is sized after a warm-up of the
    // largest step and the graph captures (on a provisional pool): it takes
    // kv_memory_fraction of what is free less what they need, not of the
    // memory free before them (which left them to run out of it).
    std::int64_t measuredBlocks = 0;
    std::string sizing;
    if (m_device.is_cuda() && request.tokens == 0) {
        if (!(request.memoryFraction > 0 && request.memoryFraction <= 1))
            return Status(StatusCode::InvalidArgument, "kv_memory_fraction must be in (0, 1]");
        auto measured = measureStepMemory(request);
        if (!measured)
            return measured.status();
        const std::int64_t free = freeDeviceMemory(m_device);
        const std::int64_t perBlock = m_shape.bytesPerToken() * request.blockTokens;
        const std::int64_t budget =
            std::int64_t(double(free) * request.memoryFraction) - measured->activations - measured->graphs;
        measuredBlocks = budget / perBlock - 1;
        if (measuredBlocks < 1)
            return Status(StatusCode::ResourceExhausted,
                          m_name + ": no room for a KV cache on " + m_device.str() + ": " + mib(free) +
                              " free, a step of " + std::to_string(measured->stepTokens) + " tokens needs " +
                              mib(measured->activations) + " and the CUDA graphs " + mib(measured->graphs));
        sizing = "after a warm-up step of " + std::to_string(measured->stepTokens) + " tokens (" +
                 mib(measured->activations) + ") and the graphs (" + mib(measured->graphs) +
                 "): kv_memory_fraction of " + mib(free) + " free, less those";
    }
    auto pool = KvPool::create(m_shape, request, m_device, m_maxPositions, measuredBlocks);
    if (!pool)
        return pool.status();
    m_pool = std::move(*pool);
    if (!sizing.empty())
        m_pool->setSizing(sizing);
    m_runner = std::make_unique<PagedRunner>(m_trunk, *m_pool, m_device, m_maxPositions);
    if (m_cudaGraphs && m_device.is_cuda()) {
        try {
            m_graphNote = m_runner->captureGraphs(PagedRunner::kGraphBuckets.back());
        } catch (const std::exception &e) {
            // Serving goes on without them: every step runs eagerly.
            m_runner = std::make_unique<PagedRunner>(m_trunk, *m_pool, m_device, m_maxPositions);
            m_graphNote = std::string("CUDA graphs: capture failed, every step runs eagerly: ") +
                          torchFailure("capture", e).message();
        }
    } else if (m_device.is_cuda()) {
        m_graphNote = "CUDA graphs: off (--cuda-graphs off)";
    }
    return Status::ok();
}

Status PagedDecoder::prepare(const KvPoolRequest &request)
{
    std::unique_lock lock(m_mutex);
    if (m_pool && m_pool->request() == request)
        return Status::ok();
    if (m_pool && m_pool->books().usedBlocks() > 0)
        return Status(StatusCode::Unavailable,
                      m_name + ": the KV cache is in use (" + std::to_string(m_pool->books().usedBlocks()) +
                          " blocks held); its size and block size change when no sequence holds a block");
    try {
        return makeLocked(request);
    } catch (const std::exception &e) {
        m_runner.reset();
        m_pool.reset();
        return Status(StatusCode::Internal, m_name + ": cannot make the KV cache: " + e.what());
    }
}

std::shared_lock<std::shared_mutex> PagedDecoder::acquire(Status &status)
{
    status = Status::ok();
    for (;;) {
        {
            std::shared_lock shared(m_mutex);
            if (m_pool)
                return shared;
        }
        std::unique_lock lock(m_mutex);
        if (m_pool)
            continue;
        try {
            status = makeLocked(KvPoolRequest{});
        } catch (const std::exception &e) {
            m_runner.reset();
            m_pool.reset();
            status = Status(StatusCode::Internal, m_name + ": cannot make the KV cache: " + e.what());
        }
        if (!status)
            return {};
    }
}

std::int64_t PagedDecoder::usedTokens() const
{
    std::shared_lock lock(m_mutex);
    return m_pool ? m_pool->books().usedBlocks() * m_pool->blockTokens() : 0;
}

std::vector<std::string> PagedDecoder::notes() const
{
    std::shared_lock lock(m_mutex);
    std::vector<std::string> out;
    if (m_pool)
        out.push_back("KV cache: " + m_pool->describe());
    if (!m_graphNote.empty())
        out.push_back(m_graphNote);
    return out;
}

Status PagedDecoder::generate(const std::vector<const std::vector<TokenId> *> &prompts,
                              const std::vector<int> &wants, const std::vector<const Request *> &requests,
                              bool keepLogits, std::vector<PagedGeneration> &out)
{
    const TimePoint start = SteadyClock::now();
    out.assign(prompts.size(), PagedGeneration{});
    Status status;
    auto hold = acquire(status);
    if (!status)
        return status;
    KvBlockPool &books = m_pool->books();
    const std::size_t M = prompts.size();

    // Every member's blocks up front, so that no step can run out of room.
    std::vector<PagedSequence> seqs(M);
    std::int64_t need = 0;
    for (std::size_t i = 0; i < M; ++i)
        need += books.blocksFor(std::int64_t(prompts[i]->size()) + wants[i] - 1);
    auto blocks = books.allocate(need);
    if (!blocks)
        return Status(StatusCode::ResourceExhausted,
                      m_name + ": the KV cache cannot hold this batch: it needs " + std::to_string(need) +
                          " blocks of " + std::to_string(books.blockTokens()) + " tokens, " +
                          std::to_string(books.freeBlocks()) + " are free");
    struct Release {
        KvBlockPool &books;
        std::vector<std::int32_t> &blocks;
        ~Release() { books.unref(blocks); }
    } release{books, *blocks};
    std::size_t next = 0;
    for (std::size_t i = 0; i < M; ++i) {
        const auto n = std::size_t(books.blocksFor(std::int64_t(prompts[i]->size()) + wants[i] - 1));
        seqs[i].blocks.assign(blocks->begin() + std::ptrdiff_t(next),
                              blocks->begin() + std::ptrdiff_t(next + n));
        next += n;
    }

    std::vector<int> remaining = wants;
    std::vector<TokenId> last(M);
    auto deliver = [&](std::size_t i, TokenId token, const at::Tensor &logits, std::int64_t row) {
        PagedGeneration &g = out[i];
        const Duration now = SteadyClock::now() - start;
        g.tokens.push_back(token);
        if (g.tokens.size() == 1)
            g.firstTokenAfter = now;
        if (--remaining[i] == 0)
            g.lastTokenAfter = now;
        if (logits.defined()) {
            const float *p = logits.data_ptr<float>() + row * logits.size(1);
            g.logits.emplace_back(p, p + logits.size(1));
        }
        if (i < requests.size() && requests[i] && requests[i]->onToken)
            requests[i]->onToken(
                TokenEvent{requests[i]->id, token, int(g.tokens.size()) - 1, SteadyClock::now()});
        last[i] = token;
    };

    // Prefill: whole prompts, in steps of at most kPrefillTokens tokens.
    for (std::size_t begin = 0; begin < M;) {
        std::vector<PagedItem> items;
        std::int64_t tokens = 0, longest = 0;
        std::size_t end = begin;
        while (end < M && (items.empty() || tokens + std::int64_t(prompts[end]->size()) <= kPrefillTokens)) {
            items.push_back({&seqs[end], std::span<const TokenId>(*prompts[end]), true});
            tokens += std::int64_t(prompts[end]->size());
            longest = std::max(longest, std::int64_t(prompts[end]->size()));
            ++end;
        }
        const nvtx::Range range(nvtx::Category::Backend, [&] {
            return "prefill b=" + std::to_string(items.size()) + " L=" + std::to_string(longest) +
                   " tokens=" + std::to_string(tokens);
        });
        const PagedStepResult r = m_runner->run(items, keepLogits);
        for (std::size_t i = begin; i < end; ++i) {
            seqs[i].length = std::int64_t(prompts[i]->size());
            deliver(i, r.next[i - begin], r.logits, std::int64_t(i - begin));
        }
        begin = end;
    }

    // Decode: one step per further token over the members still generating.
    std::vector<std::size_t> active;
    for (int step = 1;; ++step) {
        active.clear();
        for (std::size_t i = 0; i < M; ++i)
            if (remaining[i] > 0)
                active.push_back(i);
        if (active.empty())
            break;
        std::vector<PagedItem> items;
        items.reserve(active.size());
        for (std::size_t i : active)
            items.push_back({&seqs[i], std::span<const TokenId>(&last[i], 1), true});
        const nvtx::Range range(nvtx::Category::Backend, [&] {
            return "decode step=" + std::to_string(step) + " b=" + std::to_string(items.size());
        });
        const PagedStepResult r = m_runner->run(items, keepLogits);
        for (std::size_t k = 0; k < active.size(); ++k) {
            ++seqs[active[k]].length;
            deliver(active[k], r.next[k], r.logits, std::int64_t(k));
        }
    }
    return Status::ok();
}

} // namespace bp
