#include "trunk_steps.h"

#include "engine/core/nvtx.h"
#include "torch_backend.h"

#include <algorithm>

namespace bp {

TrunkStepModel::TrunkStepModel(std::string name, const TransformerShape &shape, const TrunkWeights &weights,
                               at::Device device, int threads)
    : m_name(std::move(name)), m_shape(shape), m_weights(weights), m_device(device), m_threads(threads)
{
}

Status TrunkStepModel::checkItem(const StepItem &item, std::int64_t length) const
{
    if (item.tokens.empty())
        return Status(StatusCode::InvalidArgument,
                      "a step item without tokens (sequence " + std::to_string(item.sequence) + ")");
    for (TokenId t : item.tokens)
        if (t < 0 || t >= m_shape.vocab)
            return Status(StatusCode::OutOfRange, "token " + std::to_string(t) +
                                                      " outside the vocabulary of " +
                                                      std::to_string(m_shape.vocab));
    if (length + std::int64_t(item.tokens.size()) > m_shape.maxPositions)
        return Status(StatusCode::OutOfRange, "sequence of " + std::to_string(length) + " + " +
                                                  std::to_string(item.tokens.size()) +
                                                  " tokens exceeds the model's " +
                                                  std::to_string(m_shape.maxPositions) + " positions");
    return Status::ok();
}

void TrunkStepModel::reserve(Sequence &s, std::int64_t needed) const
{
    if (needed <= s.capacity)
        return;
    const std::int64_t capacity =
        std::min<std::int64_t>(m_shape.maxPositions, std::max<std::int64_t>({needed, 2 * s.capacity, 16}));
    const auto opts = at::TensorOptions().dtype(at::kFloat).device(m_device);
    const std::int64_t H = m_shape.heads, hd = m_shape.headDim();
    if (s.layers.empty())
        s.layers.resize(m_weights.blocks.size());
    for (LayerCache &c : s.layers) {
        at::Tensor keys = at::empty({1, H, capacity, hd}, opts),
                   values = at::empty({1, H, capacity, hd}, opts);
        if (s.length > 0) {
            keys.narrow(2, 0, s.length).copy_(c.keys.narrow(2, 0, s.length));
            values.narrow(2, 0, s.length).copy_(c.values.narrow(2, 0, s.length));
        }
        c.keys = std::move(keys);
        c.values = std::move(values);
    }
    s.capacity = capacity;
}

Status TrunkStepModel::step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out)
{
    out.assign(items.size(), StepOutcome{});
    if (Status s = checkDistinctSequences(items); !s)
        return s;
    // The items that run, with their sequences (found or started).
    struct Running {
        std::size_t item;
        Sequence *sequence;
        bool started;
        std::vector<std::vector<LayerCache>> prefix; // kept blocks a started sequence begins with
    };
    std::vector<Running> running;
    {
        std::lock_guard lock(m_mutex);
        for (std::size_t i = 0; i < items.size(); ++i) {
            auto it = m_sequences.find(items[i].sequence);
            const bool started = it == m_sequences.end();
            std::int64_t length = started ? 0 : it->second->length;
            std::vector<std::vector<LayerCache>> prefix;
            if (started && !items[i].prefix.empty()) {
                auto blocks = m_kept.chain(items[i].prefix);
                if (!blocks) {
                    out[i].status = blocks.status();
                    continue;
                }
                prefix = std::move(*blocks);
                for (const std::vector<LayerCache> &b : prefix)
                    length += b.front().keys.size(2);
            }
            if (Status bad = checkItem(items[i], length); !bad) {
                out[i].status = std::move(bad);
                continue;
            }
            if (started)
                it = m_sequences.emplace(items[i].sequence, std::make_unique<Sequence>()).first;
            running.push_back({i, it->second.get(), started, std::move(prefix)});
        }
    }
    if (running.empty())
        return Status::ok();

    std::int64_t total = 0, prefills = 0;
    for (const Running &r : running) {
        total += std::int64_t(items[r.item].tokens.size());
        prefills += items[r.item].tokens.size() > 1 || r.started;
    }
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
            at::Tensor ids = at::empty({1, total}, at::kLong), positions = at::empty({1, total}, at::kLong);
            auto *idp = ids.data_ptr<std::int64_t>();
            auto *pp = positions.data_ptr<std::int64_t>();
            std::vector<std::int64_t> sampleRows;
            std::vector<std::vector<PackedSegment>> segments(m_weights.blocks.size());
            std::int64_t offset = 0;
            for (const Running &r : running) {
                const StepItem &item = items[r.item];
                Sequence &seq = *r.sequence;
                const auto count = std::int64_t(item.tokens.size());
                startFromPrefix(seq, r.prefix, count);
                reserve(seq, seq.length + count);
                for (std::int64_t j = 0; j < count; ++j) {
                    idp[offset + j] = item.tokens[std::size_t(j)];
                    pp[offset + j] = seq.length + j;
                }
                for (std::size_t l = 0; l < segments.size(); ++l)
                    segments[l].push_back({offset, count, seq.length, &seq.layers[l]});
                if (item.sample)
                    sampleRows.push_back(offset + count - 1);
                offset += count;
            }
            at::Tensor x = embed(m_weights, ids.to(m_device), positions.to(m_device));
            for (std::size_t l = 0; l < m_weights.blocks.size(); ++l)
                x = blockForwardPacked(m_weights.blocks[l], m_shape, x, segments[l]);
            std::vector<std::int64_t> next;
            if (!sampleRows.empty()) {
                const at::Tensor rows = at::tensor(sampleRows, at::kLong).to(m_device);
                const at::Tensor logits = tiedLmHead(m_weights, x.select(0, 0).index_select(0, rows));
                const at::Tensor best = logits.argmax(-1).to(at::kCPU);
                next.assign(best.data_ptr<std::int64_t>(), best.data_ptr<std::int64_t>() + best.numel());
            }
            std::size_t sampled = 0;
            std::int64_t prefixed = 0;
            for (const Running &r : running) {
                const StepItem &item = items[r.item];
                r.sequence->length += std::int64_t(item.tokens.size());
                if (item.sample)
                    out[r.item].next = TokenId(next[sampled++]);
                for (const std::vector<LayerCache> &b : r.prefix)
                    prefixed += b.front().keys.size(2);
                keepBlocks(*r.sequence, item.publish);
            }
            m_cached.fetch_add(total + prefixed);
            return Status::ok();
        });
    if (!s) {
        // Nothing was appended (lengths move only on success); sequences this
        // step started are dropped again.
        std::lock_guard lock(m_mutex);
        for (const Running &r : running)
            if (r.started)
                m_sequences.erase(items[r.item].sequence);
    }
    return s;
}

void TrunkStepModel::startFromPrefix(Sequence &s, const std::vector<std::vector<LayerCache>> &prefix,
                                     std::int64_t count) const
{
    if (prefix.empty() || s.length > 0)
        return;
    std::int64_t length = 0;
    for (const std::vector<LayerCache> &b : prefix)
        length += b.front().keys.size(2);
    reserve(s, length + count);
    for (const std::vector<LayerCache> &b : prefix) {
        const std::int64_t n = b.front().keys.size(2);
        for (std::size_t l = 0; l < s.layers.size(); ++l) {
            s.layers[l].keys.narrow(2, s.length, n).copy_(b[l].keys);
            s.layers[l].values.narrow(2, s.length, n).copy_(b[l].values);
        }
        s.length += n;
    }
}

void TrunkStepModel::keepBlocks(const Sequence &s, const std::vector<KvBlock> &blocks)
{
    for (const KvBlock &kb : blocks) {
        if (kb.start < 0 || kb.tokens <= 0 || kb.start + kb.tokens > s.length)
            continue; // not in this sequence's cache: nothing to keep
        std::vector<LayerCache> block(s.layers.size());
        for (std::size_t l = 0; l < s.layers.size(); ++l) {
            block[l].keys = s.layers[l].keys.narrow(2, kb.start, kb.tokens).clone();
            block[l].values = s.layers[l].values.narrow(2, kb.start, kb.tokens).clone();
        }
        m_kept.keep(kb.hash, std::move(block));
    }
}

void TrunkStepModel::release(std::uint64_t sequence)
{
    std::unique_ptr<Sequence> gone;
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_sequences.find(sequence);
        if (it == m_sequences.end())
            return;
        gone = std::move(it->second);
        m_sequences.erase(it);
    }
    m_cached.fetch_sub(gone->length);
    // the cache tensors are freed here, outside the lock
}

} // namespace bp
