// Step-level generation (StepModel, engine/model/backend.h) over a decoder trunk
// (transformer_layers.h): builtin:tiny-decoder's iteration-level path.
//
// Every live sequence owns a KV cache per layer ([1, heads, capacity,
// headDim], grown by doubling up to the model's positions) and its length.
// A step packs the new tokens of all its items into one row (prompt chunks
// and single decode tokens alike): the linear layers run once over all of
// them, attention runs per sequence over its own cache, so sequences of any
// lengths share a step without padding, join by appearing and leave by
// release(). Only items with `sample` pay for the LM head.
//
// Greedy, position-exact: a sequence's tokens are the ones
// TinyDecoder::run() gives it alone (up to float summation order, as for any
// two batch shapes), whatever the chunking or the company.
//
// Per item: an empty item is InvalidArgument, an id outside the vocabulary
// or a sequence past the model's positions OutOfRange; that item alone
// fails and its sequence is left as it was (a new one is not started).
// Threading: step() may run concurrently for disjoint sequence sets; the
// sequence table is locked only to look up, insert and erase.
//
// Prefix caching (StepItem::prefix / ::publish): a published block's keys and
// values are copied out of the sequence's cache after the step and kept; a
// sequence that starts from kept blocks copies them into its own cache and
// feeds only the tokens after them. Attention over the copied columns is
// the same computation as over recomputed ones, so outputs match the
// uncached path.
#pragma once

#include "engine/model/backend.h"
#include "engine/model/kept_blocks.h"
#include "transformer_layers.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace bp {

class TrunkStepModel final : public StepModel {
public:
    // `weights` must outlive this object (the backend owns both).
    TrunkStepModel(std::string name, const TransformerShape &shape, const TrunkWeights &weights,
                   at::Device device, int threads);

    Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) override;
    void release(std::uint64_t sequence) override;
    std::int64_t cachedTokens() const override { return m_cached.load(); }
    bool cachesPrefixes() const override { return true; }
    void dropBlocks(const std::vector<std::uint64_t> &hashes) override { m_kept.drop(hashes); }

private:
    struct Sequence {
        std::vector<LayerCache> layers;
        std::int64_t length = 0;   // tokens in the cache
        std::int64_t capacity = 0; // columns allocated
    };
    Status checkItem(const StepItem &item, std::int64_t length) const;
    void reserve(Sequence &s, std::int64_t needed) const;
    // A started sequence's cache begins with the kept blocks' keys and values.
    void startFromPrefix(Sequence &s, const std::vector<std::vector<LayerCache>> &prefix,
                         std::int64_t count) const;
    // Copies the sequence's columns of each block into m_kept.
    void keepBlocks(const Sequence &s, const std::vector<KvBlock> &blocks);

    std::string m_name;
    TransformerShape m_shape;
    const TrunkWeights &m_weights;
    at::Device m_device;
    int m_threads;

    std::mutex m_mutex; // guards m_sequences (the map, not the sequences a step owns)
    std::unordered_map<std::uint64_t, std::unique_ptr<Sequence>> m_sequences;
    std::atomic<std::int64_t> m_cached{0};
    // Prefix caching: kept blocks, per layer [1, heads, block, head_dim]
    // (copies: a sequence starts from them by copying them into its cache).
    KeptBlocks<std::vector<LayerCache>> m_kept;
};

} // namespace bp
