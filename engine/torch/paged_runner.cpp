#include "paged_runner.h"
#include "cpu_kernels.h"

#include "engine/core/clock.h"

#include <algorithm>
#include <cstdio>

namespace bp {

const std::vector<int> PagedRunner::kGraphBuckets = {1,  2,  4,   8,   16,  24,  32,  48, 64,
                                                     80, 96, 112, 128, 160, 192, 224, 256};

PagedRunner::PagedRunner(const PagedTrunk &trunk, KvPool &pool, const at::Device &device, int maxPositions)
    : m_trunk(trunk), m_pool(pool), m_device(device),
      m_graphWidth((std::int64_t(maxPositions) + pool.blockTokens() - 1) / pool.blockTokens())
{
}

void PagedRunner::layout(std::span<const PagedItem> items, std::int64_t rows, std::int64_t width,
                         std::int32_t *out) const
{
    std::int64_t T = 0, N = 0;
    for (const PagedItem &item : items) {
        T += std::int64_t(item.tokens.size());
        N += item.sample;
    }
    const auto padding = rows - std::int64_t(items.size());
    T += padding; // a padding row feeds one token and samples it
    N += padding;
    std::int32_t *ids = out, *pos = out + T, *slots = out + 2 * T, *querySeq = out + 3 * T,
                 *samples = out + 4 * T, *tables = out + 4 * T + N;
    const std::int64_t B = m_pool.blockTokens();
    std::int64_t t = 0, n = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const PagedItem &item = items[i];
        const PagedSequence &seq = *item.sequence;
        for (std::size_t j = 0; j < item.tokens.size(); ++j, ++t) {
            const std::int64_t p = seq.length + std::int64_t(j);
            ids[t] = item.tokens[j];
            pos[t] = std::int32_t(p);
            slots[t] = std::int32_t(std::int64_t(seq.blocks[std::size_t(p / B)]) * B + p % B);
            querySeq[t] = std::int32_t(i);
        }
        if (item.sample)
            samples[n++] = std::int32_t(t - 1);
        std::int32_t *row = tables + std::int64_t(i) * width;
        const auto copied = std::min<std::int64_t>(width, std::int64_t(seq.blocks.size()));
        std::copy_n(seq.blocks.begin(), copied, row);
        std::fill(row + copied, row + width, 0);
    }
    for (std::int64_t r = std::int64_t(items.size()); r < rows; ++r, ++t) {
        ids[t] = 0;
        pos[t] = 0;
        slots[t] = 0; // the scratch block
        querySeq[t] = std::int32_t(r);
        samples[n++] = std::int32_t(t);
        std::fill(tables + r * width, tables + (r + 1) * width, 0);
    }
}

StepTensors PagedRunner::views(const at::Tensor &packed, std::int64_t tokens, std::int64_t sequences,
                               std::int64_t samples, std::int64_t width) const
{
    StepTensors s;
    s.tokens = tokens;
    s.sequences = sequences;
    s.samples = samples;
    s.ids = packed.narrow(0, 0, tokens);
    s.positions = packed.narrow(0, tokens, tokens);
    s.slots = packed.narrow(0, 2 * tokens, tokens);
    s.querySeq = packed.narrow(0, 3 * tokens, tokens);
    s.sampleRows = packed.narrow(0, 4 * tokens, samples);
    s.blockTables = packed.narrow(0, 4 * tokens + samples, sequences * width).view({sequences, width});
    return s;
}

PagedStepResult PagedRunner::run(std::span<const PagedItem> items, bool wantLogits)
{
    if (m_graphs && !wantLogits) {
        bool decodeOnly = !items.empty();
        for (const PagedItem &item : items)
            decodeOnly = decodeOnly && item.tokens.size() == 1 && item.sample &&
                         std::int64_t(item.sequence->blocks.size()) <= m_graphWidth;
        if (decodeOnly && int(items.size()) <= m_maxGraphBatch) {
            const auto bucket =
                std::lower_bound(kGraphBuckets.begin(), kGraphBuckets.end(), int(items.size()));
            if (bucket != kGraphBuckets.end() && m_graphs->has(*bucket))
                return runGraph(items, *bucket);
        }
    }
    return runEager(items, wantLogits);
}

PagedStepResult PagedRunner::runEager(std::span<const PagedItem> items, bool wantLogits)
{
    std::int64_t T = 0, N = 0;
    const std::int64_t W = tableColumns(items);
    for (const PagedItem &item : items) {
        T += std::int64_t(item.tokens.size());
        N += item.sample;
    }
    const auto S = std::int64_t(items.size());
    const std::int64_t size = 4 * T + N + S * W;
    at::Tensor host = stagingTensor(size, at::kInt, m_device);
    layout(items, S, W, host.data_ptr<std::int32_t>());
    m_lastUploadColumns = W;
    at::Tensor packed = host;
    if (!m_device.is_cpu()) {
        packed = at::empty({size}, at::TensorOptions().dtype(at::kInt).device(m_device));
        packed.copy_(host, /*non_blocking=*/true);
    }
    PagedStepResult result;
    if (N == 0) {
        // Only non-final prefill chunks: keys and values, no sampling.
        const StepTensors st = views(packed, T, S, 0, W);
        (void)m_trunk.logits(st, m_pool);
        synchronize(m_device);
        return result;
    }
    const StepTensors st = views(packed, T, S, N, W);
    const at::Tensor logits = m_trunk.logits(st, m_pool);
    // On the CPU the rows' argmax of our own (cpu_kernels.h): ATen's compares an element at a time.
    const at::Tensor next = cpuFused(logits) && logits.dim() == 2 && logits.is_contiguous()
                                ? argmaxRowsCpu(logits)
                                : logits.argmax(-1);
    at::Tensor nextHost = stagingTensor(N, at::kLong, m_device);
    nextHost.copy_(next, /*non_blocking=*/true);
    if (wantLogits)
        result.logits = logits.to(at::kFloat).to(at::kCPU); // tests only: a second copy
    synchronize(m_device);
    const auto *p = nextHost.data_ptr<std::int64_t>();
    result.next.assign(p, p + N);
    return result;
}

std::int64_t PagedRunner::tableColumns(std::span<const PagedItem> items)
{
    std::int64_t width = 1;
    for (const PagedItem &item : items)
        width = std::max<std::int64_t>(width, std::int64_t(item.sequence->blocks.size()));
    return width;
}

PagedStepResult PagedRunner::runGraph(std::span<const PagedItem> items, int bucket)
{
    const std::lock_guard lock(m_graphMutex);
    const auto index =
        std::size_t(std::find(kGraphBuckets.begin(), kGraphBuckets.end(), bucket) - kGraphBuckets.begin());
    at::Tensor &input = m_graphInputs[index];
    // Only the block-table columns this step's sequences use go up (the
    // graph's table is m_graphWidth = maxPositions / blockTokens wide): a
    // query reads its own row up to its position's block, and a padding
    // row only column 0, so the columns past `width` are never read.
    const std::int64_t width = tableColumns(items), head = 5 * std::int64_t(bucket);
    at::Tensor host = stagingTensor(head + bucket * width, at::kInt, m_device);
    layout(items, bucket, width, host.data_ptr<std::int32_t>());
    input.narrow(0, 0, head).copy_(host.narrow(0, 0, head), /*non_blocking=*/true);
    input.narrow(0, head, bucket * m_graphWidth)
        .view({bucket, m_graphWidth})
        .narrow(1, 0, width)
        .copy_(host.narrow(0, head, bucket * width).view({bucket, width}), /*non_blocking=*/true);
    m_lastUploadColumns = width;
    const at::Tensor &out = m_graphs->replay(bucket);
    const auto b = std::int64_t(items.size());
    at::Tensor nextHost = stagingTensor(b, at::kLong, m_device);
    nextHost.copy_(out.narrow(0, 0, b), /*non_blocking=*/true);
    synchronize(m_device);
    PagedStepResult result;
    result.graph = true;
    const auto *p = nextHost.data_ptr<std::int64_t>();
    result.next.assign(p, p + b);
    return result;
}

std::string PagedRunner::captureGraphs(int maxBatch)
{
    if (!cudaGraphsAvailable(m_device))
        return "CUDA graphs: off (not a CUDA device)";
    const TimePoint start = SteadyClock::now();
    const std::int64_t before = reservedDeviceMemory(m_device);
    auto graphs = std::make_unique<CudaGraphs>(m_device);
    std::vector<at::Tensor> inputs(kGraphBuckets.size());
    int captured = 0, largest = 0;
    // Largest first: the smaller ones fit in the memory it leaves in the shared pool.
    for (std::size_t i = kGraphBuckets.size(); i-- > 0;) {
        const int bucket = kGraphBuckets[i];
        if (bucket > maxBatch)
            continue;
        const std::int64_t size = 5 * bucket + bucket * m_graphWidth;
        inputs[i] = at::zeros({size}, at::TensorOptions().dtype(at::kInt).device(m_device));
        const at::Tensor &input = inputs[i];
        graphs->capture(bucket, [&] {
            const StepTensors st = views(input, bucket, bucket, bucket, m_graphWidth);
            return m_trunk.logits(st, m_pool).argmax(-1);
        });
        ++captured;
        largest = std::max(largest, bucket);
    }
    const double ms = std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
    const double mib = double(reservedDeviceMemory(m_device) - before) / double(1 << 20);
    {
        const std::lock_guard lock(m_graphMutex);
        m_graphs = std::move(graphs);
        m_graphInputs = std::move(inputs);
        m_maxGraphBatch = largest;
    }
    char line[160];
    std::snprintf(line, sizeof line,
                  "CUDA graphs: %d decode steps captured (batch 1..%d) in %.0f ms, %.1f MiB", captured,
                  largest, ms, mib);
    return line;
}

} // namespace bp
