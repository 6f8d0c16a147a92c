// How one generation step is laid out on the device and run (nano-vllm's
// model runner): the scheduler says *which* sequences run, the
// block books (KvBlockPool) say *where* their keys and values live, and the
// runner turns the step into flat tensors, runs the model once over all of
// them and samples on the device.
//
// A step's layout, for S sequences feeding T tokens and sampling N of them:
//   ids, positions, slots, querySeq   int32 [T]   (slot: where the token's K/V go)
//   sampleRows                        int32 [N]   (rows of the hidden states to sample)
//   blockTables                       int32 [S, W] (W: the widest table in the step;
//                                     a graph replay uploads these W columns too)
// all packed into one host buffer (page-locked on CUDA) and copied up in one
// go; the greedy next tokens (argmax on the device) come back in one copy,
// the step's one host-device synchronisation.
//
// CUDA graphs: a step that only decodes (every item one token, sampled) runs
// as a replay of the graph captured for the smallest batch-size bucket that
// holds it (kGraphBuckets), its rows padded with dummy rows that write to the
// pool's scratch block; other steps (prefill chunks), steps wider than the
// largest bucket, and every step on the CPU run eagerly. Graph replays are
// serialised by a mutex; eager steps may run concurrently (disjoint
// sequences).
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include "cuda_support.h"
#include "kv_pool.h"

#include "engine/core/request.h"

#include <ATen/ATen.h>

#include <atomic>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace bp {

// A step's layout on the device (views of one upload).
struct StepTensors {
    at::Tensor ids, positions, slots, querySeq, sampleRows, blockTables;
    std::int64_t tokens = 0, sequences = 0, samples = 0;
};

// A decoder's arithmetic over a step: the logits of the sampled rows,
// [samples, vocab], in the model's dtype. It writes the step's keys and
// values into the pool and attends through it (kernels/paged_attention.h),
// one call per layer for every token; no loop over sequences.
class PagedTrunk {
public:
    virtual ~PagedTrunk() = default;
    virtual at::Tensor logits(const StepTensors &step, KvPool &pool) const = 0;
};

// A sequence as the runner sees it: its block table and how many of its
// tokens have keys and values in the pool.
struct PagedSequence {
    std::vector<std::int32_t> blocks;
    std::int64_t length = 0;
    std::vector<TokenId> tokens; // those tokens (prefix blocks are kept with theirs)
};

struct PagedItem {
    const PagedSequence *sequence = nullptr; // blocks already cover length + tokens
    std::span<const TokenId> tokens;         // fed now, at positions length ..
    bool sample = true;
};

struct PagedStepResult {
    std::vector<TokenId> next; // per sampled item, in item order
    at::Tensor logits;         // float [samples, vocab] on the CPU, when asked for
    bool graph = false;        // ran as a CUDA-graph replay
};

class PagedRunner {
public:
    // Batch-size buckets a decode step is captured for (vLLM's capture sizes).
    static const std::vector<int> kGraphBuckets;

    // `trunk` and `pool` must outlive the runner. `maxPositions`: the model's
    // length, which fixes the block-table width of a graph.
    PagedRunner(const PagedTrunk &trunk, KvPool &pool, const at::Device &device, int maxPositions);

    // Captures the decode graphs (CUDA only; buckets up to `maxBatch`).
    // Returns a line for the log: graphs, time, memory.
    std::string captureGraphs(int maxBatch);
    bool hasGraphs() const { return m_graphs != nullptr && m_graphs->size() > 0; }

    // One step; throws (a torch error) on failure.
    PagedStepResult run(std::span<const PagedItem> items, bool wantLogits = false);

    // The block-table columns a step uploads: its widest sequence's blocks
    // (at least 1), for an eager step and a graph replay alike (a graph's
    // table is wider; the columns past these are never read).
    static std::int64_t tableColumns(std::span<const PagedItem> items);
    // Those of the last step run (tests: the graph path's upload width).
    std::int64_t lastUploadColumns() const { return m_lastUploadColumns; }

private:
    PagedStepResult runEager(std::span<const PagedItem> items, bool wantLogits);
    PagedStepResult runGraph(std::span<const PagedItem> items, int bucket);
    // Fills `out` (int32) with the packed layout; `rows` >= items (padding
    // rows decode token 0 at position 0 into the scratch block).
    void layout(std::span<const PagedItem> items, std::int64_t rows, std::int64_t width,
                std::int32_t *out) const;
    StepTensors views(const at::Tensor &packed, std::int64_t tokens, std::int64_t sequences,
                      std::int64_t samples, std::int64_t width) const;

    const PagedTrunk &m_trunk;
    KvPool &m_pool;
    at::Device m_device;
    std::int64_t m_graphWidth; // block-table width of a graph step
    std::mutex m_graphMutex;   // one replay at a time (static buffers)
    std::unique_ptr<CudaGraphs> m_graphs;
    std::vector<at::Tensor> m_graphInputs; // per bucket index: the static packed buffer
    int m_maxGraphBatch = 0;
    std::atomic<std::int64_t> m_lastUploadColumns{0};
};

} // namespace bp
