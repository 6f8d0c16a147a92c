#include "trunk_steps.h"

#include "engine/core/nvtx.h"
#include "sequence_table.h"
#include "torch_backend.h"

#include <algorithm>

namespace bp {

PagedStepModel::PagedStepModel(std::string name, PagedDecoder &decoder, int vocab, int maxPositions,
                               int threads)
    : m_name(std::move(name)), m_decoder(decoder), m_vocab(vocab), m_maxPositions(maxPositions),
      m_threads(threads)
{
}

Status PagedStepModel::checkItem(const StepItem &item, std::int64_t length) const
{
    if (item.tokens.empty())
        return Status(StatusCode::InvalidArgument,
                      "a step item without tokens (sequence " + std::to_string(item.sequence) + ")");
    for (TokenId t : item.tokens)
        if (t < 0 || t >= m_vocab)
            return Status(StatusCode::OutOfRange, "token " + std::to_string(t) +
                                                      " outside the vocabulary of " +
                                                      std::to_string(m_vocab));
    if (length + std::int64_t(item.tokens.size()) > m_maxPositions)
        return Status(StatusCode::OutOfRange,
                      "sequence of " + std::to_string(length) + " + " + std::to_string(item.tokens.size()) +
                          " tokens exceeds the model's " + std::to_string(m_maxPositions) + " positions");
    return Status::ok();
}

Status PagedStepModel::step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out)
{
    out.assign(items.size(), StepOutcome{});
    if (Status s = checkDistinctSequences(items); !s)
        return s;
    Status held;
    const auto hold = m_decoder.acquire(held);
    if (!held)
        return held;
    KvBlockPool &books = m_decoder.pool().books();

    struct Running {
        std::size_t item;
        PagedSequence *sequence;
        bool started;
        std::size_t blocksBefore; // to give back what this step added, if it fails
    };
    std::vector<Running> running;
    {
        std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < items.size(); ++i) {
            const StepItem &item = items[i];
            auto it = m_sequences.find(item.sequence);
            const bool started = it == m_sequences.end();
            auto fresh = std::make_unique<PagedSequence>();
            PagedSequence *seq = started ? fresh.get() : it->second.get();
            if (started && !item.prefix.empty()) {
                auto blocks = books.chain(item.prefix, &fresh->tokens);
                if (!blocks) {
                    out[i].status = blocks.status();
                    continue;
                }
                fresh->blocks = std::move(*blocks);
                fresh->length = std::int64_t(fresh->tokens.size());
            }
            if (Status bad = checkItem(item, seq->length); !bad) {
                out[i].status = std::move(bad);
                books.unref(fresh->blocks);
                continue;
            }
            const std::size_t before = seq->blocks.size();
            const std::int64_t need =
                books.blocksFor(seq->length + std::int64_t(item.tokens.size())) - std::int64_t(before);
            if (need > 0) {
                auto more = books.allocate(need);
                if (!more) {
                    out[i].status =
                        Status(StatusCode::ResourceExhausted,
                               m_name + ": the KV cache is full (" + std::to_string(books.totalBlocks()) +
                                   " blocks of " + std::to_string(books.blockTokens()) + " tokens)");
                    books.unref(fresh->blocks);
                    continue;
                }
                seq->blocks.insert(seq->blocks.end(), more->begin(), more->end());
            }
            if (started)
                it = m_sequences.emplace(item.sequence, std::move(fresh)).first;
            running.push_back({i, it->second.get(), started, started ? 0 : before});
        }
    }
    if (running.empty())
        return Status::ok();

    std::int64_t total = 0, prefills = 0;
    bool wantLogits = false;
    std::vector<PagedItem> paged;
    paged.reserve(running.size());
    for (const Running &r : running) {
        const StepItem &item = items[r.item];
        total += std::int64_t(item.tokens.size());
        prefills += item.tokens.size() > 1 || r.started;
        wantLogits = wantLogits || (item.logits && item.sample);
        paged.push_back({r.sequence, std::span<const TokenId>(item.tokens), item.sample});
    }
    PagedStepResult result;
    const Status s = runTorch(
        m_threads,
        [&] {
            return m_name + " failed on a step of " + std::to_string(running.size()) + " sequences, " +
                   std::to_string(total) + " tokens";
        },
        [&]() -> Status {
            const nvtx::Range range(nvtx::Category::Backend, [&] {
                return "step seqs=" + std::to_string(running.size()) + " tokens=" + std::to_string(total) +
                       " prefill=" + std::to_string(prefills);
            });
            result = m_decoder.runner().run(paged, wantLogits);
            return Status::ok();
        });
    if (!s) {
        // Nothing was appended (lengths move only on success): sequences this
        // step started are dropped, the others give back the blocks it added.
        std::lock_guard lock(m_mutex);
        for (const Running &r : running) {
            PagedSequence &seq = *r.sequence;
            if (r.started) {
                books.unref(seq.blocks);
                m_sequences.erase(items[r.item].sequence);
            } else {
                books.unref(std::span<const std::int32_t>(seq.blocks).subspan(r.blocksBefore));
                seq.blocks.resize(r.blocksBefore);
            }
        }
        return s;
    }
    std::size_t sampled = 0;
    for (const Running &r : running) {
        const StepItem &item = items[r.item];
        PagedSequence &seq = *r.sequence;
        seq.length += std::int64_t(item.tokens.size());
        seq.tokens.insert(seq.tokens.end(), item.tokens.begin(), item.tokens.end());
        if (item.sample) {
            if (item.logits && result.logits.defined()) {
                const float *p =
                    result.logits.data_ptr<float>() + std::int64_t(sampled) * result.logits.size(1);
                out[r.item].logits.assign(p, p + result.logits.size(1));
            }
            out[r.item].next = result.next[sampled++];
        }
        publish(seq, item.publish, books);
    }
    return Status::ok();
}

void PagedStepModel::publish(PagedSequence &s, const std::vector<KvBlock> &blocks, KvBlockPool &books)
{
    const std::int64_t B = books.blockTokens();
    for (const KvBlock &kb : blocks) {
        if (kb.start < 0 || kb.tokens <= 0 || kb.start % B != 0 || kb.tokens % B != 0 ||
            kb.start + kb.tokens > s.length)
            continue; // not whole pool blocks of this sequence: nothing to keep
        const auto first = std::size_t(kb.start / B), count = std::size_t(kb.tokens / B);
        const std::span<const std::int32_t> mine(s.blocks.data() + first, count);
        const std::span<const TokenId> tokens(s.tokens.data() + kb.start, std::size_t(kb.tokens));
        if (books.keep(kb.hash, mine, tokens))
            continue;
        // Kept already: point at the kept copy and give ours back.
        if (auto kept = books.share(kb.hash, tokens)) {
            books.unref(mine);
            std::copy(kept->begin(), kept->end(), s.blocks.begin() + std::ptrdiff_t(first));
        }
    }
}

void PagedStepModel::release(std::uint64_t sequence)
{
    const std::unique_ptr<PagedSequence> gone = takeSequence(m_mutex, m_sequences, sequence);
    if (!gone)
        return;
    Status held;
    const auto hold = m_decoder.acquire(held);
    if (held)
        m_decoder.pool().books().unref(gone->blocks);
}

std::int64_t PagedStepModel::cachedTokens() const
{
    return m_decoder.usedTokens();
}

void PagedStepModel::dropBlocks(const std::vector<std::uint64_t> &hashes)
{
    Status held;
    const auto hold = m_decoder.acquire(held);
    if (held)
        m_decoder.pool().books().drop(hashes);
}

KvPoolInfo PagedStepModel::kvPool()
{
    Status held;
    const auto hold = m_decoder.acquire(held);
    if (!held)
        return {};
    const KvPool &pool = m_decoder.pool();
    return {pool.capacityTokens(), pool.blockTokens()};
}

} // namespace bp
