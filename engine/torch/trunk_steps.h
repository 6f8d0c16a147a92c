// Step-level generation (StepModel, engine/model/backend.h) of a paged
// decoder (paged_decoder.h): builtin:tiny-decoder's iteration-level path.
//
// Every live sequence holds a table of KV-pool blocks and its length. A step
// lays out the new tokens of all its items (prompt chunks and single decode
// tokens alike) and runs the model once over all of them (paged_runner.h):
// the linear layers over every token, attention in one call per layer for
// every sequence, each over its own blocks, so sequences of any lengths share
// a step without padding, join by appearing and leave by release(). Only
// items with `sample` pay for the LM head.
//
// Greedy, position-exact: a sequence's tokens are the ones the request-level
// path gives it alone (up to float summation order, as for any two batch
// shapes), whatever the chunking or the company.
//
// KV books: a sequence of n tokens holds ceil(n / block) blocks; before a
// step each item gets the blocks its new tokens need. kvPool() tells the
// scheduler the pool's capacity and block size so that its books are the
// pool's: an item that finds the pool full fails alone (ResourceExhausted),
// which a scheduler keeping those books never lets happen.
//
// Per item: an empty item is InvalidArgument, an id outside the vocabulary
// or a sequence past the model's positions OutOfRange; that item alone
// fails and its sequence is left as it was (a new one is not started).
// Threading: step() may run concurrently for disjoint sequence sets; the
// sequence table is locked only to look up, insert and erase.
//
// Prefix caching (StepItem::prefix / ::publish) shares blocks, nothing is
// copied: a published block (a whole number of pool blocks) is kept under its
// hash with one more reference on its pool blocks; a sequence that starts
// from kept blocks puts them at the head of its table and feeds only the
// tokens after them. When a block's hash is kept already (another sequence
// computed the same tokens), the sequence drops its own copy and points at
// the kept one, so the pool holds it once, as the scheduler books it.
#pragma once

#include "engine/model/backend.h"
#include "paged_decoder.h"

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace bp {

class PagedStepModel final : public StepModel {
public:
    // `decoder` must outlive this object (the backend owns both).
    PagedStepModel(std::string name, PagedDecoder &decoder, int vocab, int maxPositions, int threads);

    Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) override;
    void release(std::uint64_t sequence) override;
    // Token slots of the blocks in use (sequences' and kept ones), whole blocks.
    std::int64_t cachedTokens() const override;
    bool cachesPrefixes() const override { return true; }
    void dropBlocks(const std::vector<std::uint64_t> &hashes) override;
    KvPoolInfo kvPool() override;

private:
    Status checkItem(const StepItem &item, std::int64_t length) const;
    // After a successful step: the published blocks are kept (or shared).
    void publish(PagedSequence &s, const std::vector<KvBlock> &blocks, KvBlockPool &books);

    std::string m_name;
    PagedDecoder &m_decoder;
    int m_vocab;
    int m_maxPositions;
    int m_threads;
    std::mutex m_mutex; // guards m_sequences (the map, not the sequences a step owns)
    std::unordered_map<std::uint64_t, std::unique_ptr<PagedSequence>> m_sequences;
};

} // namespace bp
