#include "torchscript_decoder.h"

#include "engine/core/nvtx.h"
#include "engine/model/kept_blocks.h"
#include "sequence_table.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace bp {

namespace {

std::string shapeOf(const at::Tensor &t)
{
    std::ostringstream s;
    s << t.sizes();
    return s.str();
}

bool isTensorType(const c10::TypePtr &type)
{
    return type->kind() == c10::TypeKind::TensorType;
}

// One sequence: its columns of `present`, [layers, 2, 1, heads, length, head_dim].
struct Sequence {
    at::Tensor cache; // undefined while length == 0
    std::int64_t length = 0;
};

// What one forward call returns, before it is committed to the sequences.
struct Forwarded {
    std::vector<at::Tensor> caches; // the new cache of each row
    std::vector<TokenId> next;      // greedy next token after each row
};

// One forward over `rows` (sequence i appends `tokens[i]`), batched: ids
// left-padded to the longest T, the caches right-aligned into one `past` of
// the longest P. Throws on a result that breaks the contract.
Forwarded forwardRows(torch::jit::Module &module, const at::Device &device,
                      const std::vector<const Sequence *> &rows,
                      const std::vector<const std::vector<TokenId> *> &tokens)
{
    const auto B = std::int64_t(rows.size());
    std::int64_t P = 0, T = 0;
    const Sequence *withCache = nullptr;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        P = std::max(P, rows[i]->length);
        T = std::max(T, std::int64_t(tokens[i]->size()));
        if (rows[i]->length > 0)
            withCache = rows[i];
    }
    at::Tensor ids = at::zeros({B, T}, at::kLong);
    at::Tensor mask = at::zeros({B, P + T}, at::kBool);
    auto *idp = ids.data_ptr<std::int64_t>();
    auto *mp = mask.data_ptr<bool>();
    for (std::int64_t i = 0; i < B; ++i) {
        const auto &row = *tokens[std::size_t(i)];
        const std::int64_t n = rows[std::size_t(i)]->length, t = std::int64_t(row.size());
        for (std::int64_t j = P - n; j < P; ++j)
            mp[i * (P + T) + j] = true;
        for (std::int64_t j = 0; j < t; ++j) {
            idp[i * T + T - t + j] = row[std::size_t(j)];
            mp[i * (P + T) + P + T - t + j] = true;
        }
    }
    c10::IValue past; // None on a first step
    if (withCache) {
        std::vector<std::int64_t> shape = withCache->cache.sizes().vec();
        shape[2] = B;
        shape[4] = P;
        at::Tensor batch = at::zeros(shape, withCache->cache.options());
        for (std::int64_t i = 0; i < B; ++i) {
            const Sequence &s = *rows[std::size_t(i)];
            if (s.length > 0)
                batch.select(2, i).narrow(3, P - s.length, s.length).copy_(s.cache.select(2, 0));
        }
        past = batch;
    }
    const c10::IValue result = module.forward({ids.to(device), mask.to(device), past});
    const auto elements = result.toTupleRef().elements();
    if (elements.size() != 2 || !elements[0].isTensor() || !elements[1].isTensor())
        throw std::runtime_error("forward did not return (logits, present)");
    const at::Tensor logits = elements[0].toTensor(), present = elements[1].toTensor();
    if (!((logits.dim() == 3 && logits.size(0) == B && logits.size(1) == T) ||
          (logits.dim() == 2 && logits.size(0) == B)))
        throw std::runtime_error("logits of shape " + shapeOf(logits) + " for " + std::to_string(B) +
                                 " rows of " + std::to_string(T) +
                                 " new tokens; expected [B, T, vocab] or [B, vocab]");
    if (present.dim() != 6 || present.size(1) != 2 || present.size(2) != B || present.size(4) != P + T ||
        (withCache &&
         (present.size(0) != withCache->cache.size(0) || present.size(3) != withCache->cache.size(3) ||
          present.size(5) != withCache->cache.size(5))))
        throw std::runtime_error("present of shape " + shapeOf(present) + " after " + std::to_string(P) +
                                 " cached and " + std::to_string(T) + " new columns; expected [layers, 2, " +
                                 std::to_string(B) + ", heads, " + std::to_string(P + T) +
                                 ", head_dim] (past with the new tokens' keys and values appended)");
    const at::Tensor last = logits.dim() == 3 ? logits.select(1, T - 1) : logits;
    const at::Tensor best = last.argmax(-1).to(at::kCPU, at::kLong);
    Forwarded f;
    f.next.resize(std::size_t(B));
    f.caches.resize(std::size_t(B));
    for (std::int64_t i = 0; i < B; ++i) {
        const Sequence &s = *rows[std::size_t(i)];
        const auto t = std::int64_t(tokens[std::size_t(i)]->size());
        const at::Tensor added = present.select(2, i).narrow(3, P + T - t, t).unsqueeze(2);
        f.caches[std::size_t(i)] = s.length > 0 ? at::cat({s.cache, added}, 4) : added.contiguous();
        f.next[std::size_t(i)] = TokenId(best.data_ptr<std::int64_t>()[i]);
    }
    return f;
}

class TorchScriptDecoder final : public TorchBackend<>, public StepModel {
public:
    TorchScriptDecoder(torch::jit::Module module, ModelInfo info, const TorchPlacement &placement)
        : TorchBackend(placement), m_module(std::move(module)), m_positions(info.maxSequenceLength)
    {
        m_info = std::move(info);
        m_info.device = placement.device.name;
        // Room for at least one generated token, as builtin:tiny-decoder.
        m_info.maxSequenceLength = std::max(1, m_positions - 1);
        m_info.generative = true;
        m_info.maxNewTokensLimit = std::max(1, m_positions - 1);
    }

    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        // The members that run and how many tokens each still wants.
        std::vector<std::size_t> members;
        std::vector<int> remaining;
        for (std::size_t i = 0; i < input.requests.size(); ++i) {
            const Request &r = *input.requests[i];
            const int want = std::max(1, r.maxNewTokens);
            if (r.tokens.empty()) {
                out[i].status = Status(StatusCode::InvalidArgument, "empty input sequence");
            } else if (std::int64_t(r.tokens.size()) + want > m_positions) {
                out[i].status = Status(StatusCode::OutOfRange,
                                       "input of " + std::to_string(r.tokens.size()) + " tokens + " +
                                           std::to_string(want) + " new tokens exceeds the model's " +
                                           std::to_string(m_positions) + " positions");
            } else {
                members.push_back(i);
                remaining.push_back(want);
            }
        }
        if (members.empty())
            return Status::ok();
        return guarded(
            [&] {
                return "TorchScript decoder '" + m_info.name + "' failed on a batch of " +
                       std::to_string(members.size());
            },
            [&] {
                const TimePoint start = SteadyClock::now();
                std::vector<Sequence> sequences(members.size());
                std::vector<std::size_t> live(members.size());
                std::vector<std::vector<TokenId>> fed(members.size());
                for (std::size_t m = 0; m < members.size(); ++m) {
                    live[m] = m;
                    fed[m] = input.requests[members[m]]->tokens;
                }
                for (int step = 0; !live.empty(); ++step) {
                    const nvtx::Range range(nvtx::Category::Backend, [&] {
                        return (step == 0 ? "prefill b=" : "decode step=" + std::to_string(step) + " b=") +
                               std::to_string(live.size());
                    });
                    std::vector<const Sequence *> rows;
                    std::vector<const std::vector<TokenId> *> tokens;
                    for (std::size_t m : live) {
                        rows.push_back(&sequences[m]);
                        tokens.push_back(&fed[m]);
                    }
                    Forwarded f = forwardRows(m_module, m_device, rows, tokens);
                    const Duration now = SteadyClock::now() - start;
                    std::vector<std::size_t> still;
                    for (std::size_t k = 0; k < live.size(); ++k) {
                        const std::size_t m = live[k];
                        SequenceResult &r = out[members[m]];
                        sequences[m].length += std::int64_t(fed[m].size());
                        sequences[m].cache = std::move(f.caches[k]);
                        r.tokens.push_back(f.next[k]);
                        if (const Request &rq = *input.requests[members[m]]; rq.onToken)
                            rq.onToken(
                                TokenEvent{rq.id, f.next[k], int(r.tokens.size()) - 1, SteadyClock::now()});
                        if (step == 0)
                            r.firstTokenAfter = now;
                        if (--remaining[m] == 0) {
                            r.lastTokenAfter = now;
                            sequences[m] = Sequence{}; // frees its cache now
                        } else {
                            fed[m] = {f.next[k]};
                            still.push_back(m);
                        }
                    }
                    live = std::move(still);
                }
                return Status::ok();
            });
    }

    StepModel *steps() override { return this; }

    Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) override
    {
        out.assign(items.size(), StepOutcome{});
        if (Status s = checkDistinctSequences(items); !s)
            return s;
        std::vector<std::size_t> running;
        std::vector<Sequence *> sequences;
        std::vector<bool> started;
        std::vector<std::vector<at::Tensor>> prefixes; // kept blocks a started sequence begins with
        {
            std::lock_guard lock(m_mutex);
            for (std::size_t i = 0; i < items.size(); ++i) {
                auto it = m_sequences.find(items[i].sequence);
                const bool starts = it == m_sequences.end();
                std::int64_t length = starts ? 0 : it->second->length;
                std::vector<at::Tensor> prefix;
                if (starts && !items[i].prefix.empty()) {
                    auto blocks = m_kept.chain(items[i].prefix);
                    if (!blocks) {
                        out[i].status = blocks.status();
                        continue;
                    }
                    prefix = std::move(*blocks);
                    for (const at::Tensor &b : prefix)
                        length += b.size(4);
                }
                if (Status bad = checkItem(items[i], length); !bad) {
                    out[i].status = std::move(bad);
                    continue;
                }
                started.push_back(starts);
                if (starts)
                    it = m_sequences.emplace(items[i].sequence, std::make_unique<Sequence>()).first;
                running.push_back(i);
                sequences.push_back(it->second.get());
                prefixes.push_back(std::move(prefix));
            }
        }
        if (running.empty())
            return Status::ok();
        const Status s = guarded(
            [&] {
                return "TorchScript decoder '" + m_info.name + "' failed on a step of " +
                       std::to_string(running.size()) + " sequences";
            },
            [&] {
                const nvtx::Range range(nvtx::Category::Backend,
                                        [&] { return "step seqs=" + std::to_string(running.size()); });
                // Prefix caching: a started sequence's columns begin with
                // the kept blocks' (the engine's copy of `present`, as
                // between any two steps: the contract is unchanged).
                std::int64_t prefixed = 0;
                for (std::size_t k = 0; k < running.size(); ++k)
                    if (!prefixes[k].empty()) {
                        sequences[k]->cache = at::cat(prefixes[k], 4);
                        sequences[k]->length = sequences[k]->cache.size(4);
                        prefixed += sequences[k]->length;
                    }
                std::vector<const Sequence *> rows(sequences.begin(), sequences.end());
                std::vector<const std::vector<TokenId> *> tokens;
                for (std::size_t i : running)
                    tokens.push_back(&items[i].tokens);
                Forwarded f = forwardRows(m_module, m_device, rows, tokens);
                std::int64_t added = 0;
                for (std::size_t k = 0; k < running.size(); ++k) {
                    const StepItem &item = items[running[k]];
                    sequences[k]->cache = std::move(f.caches[k]);
                    sequences[k]->length += std::int64_t(item.tokens.size());
                    added += std::int64_t(item.tokens.size());
                    if (item.sample)
                        out[running[k]].next = f.next[k];
                    for (const KvBlock &kb : item.publish)
                        if (kb.start >= 0 && kb.tokens > 0 && kb.start + kb.tokens <= sequences[k]->length)
                            m_kept.keep(kb.hash, sequences[k]->cache.narrow(4, kb.start, kb.tokens).clone());
                }
                m_cached.fetch_add(added + prefixed);
                return Status::ok();
            });
        if (!s) {
            std::lock_guard lock(m_mutex);
            for (std::size_t k = 0; k < running.size(); ++k)
                if (started[k])
                    m_sequences.erase(items[running[k]].sequence);
        }
        return s;
    }

    void release(std::uint64_t sequence) override
    {
        if (const std::unique_ptr<Sequence> gone = takeSequence(m_mutex, m_sequences, sequence))
            m_cached.fetch_sub(gone->length);
    }

    std::int64_t cachedTokens() const override { return m_cached.load(); }
    bool cachesPrefixes() const override { return true; }
    void dropBlocks(const std::vector<std::uint64_t> &hashes) override { m_kept.drop(hashes); }

private:
    Status checkItem(const StepItem &item, std::int64_t length) const
    {
        if (item.tokens.empty())
            return Status(StatusCode::InvalidArgument, "a step item without tokens");
        for (TokenId t : item.tokens)
            if (t < 0 || t >= m_info.vocabSize)
                return Status(StatusCode::OutOfRange, "token " + std::to_string(t) +
                                                          " outside the vocabulary of " +
                                                          std::to_string(m_info.vocabSize));
        if (length + std::int64_t(item.tokens.size()) > m_positions)
            return Status(StatusCode::OutOfRange, "sequence of " + std::to_string(length) + " + " +
                                                      std::to_string(item.tokens.size()) +
                                                      " tokens exceeds the model's " +
                                                      std::to_string(m_positions) + " positions");
        return Status::ok();
    }

    // forward() is safe to call from several threads (TorchScript modules are).
    mutable torch::jit::Module m_module;
    int m_positions; // the model's positions (max_sequence_length)

    std::mutex m_mutex; // guards m_sequences (the map; a step owns its sequences)
    std::unordered_map<std::uint64_t, std::unique_ptr<Sequence>> m_sequences;
    std::atomic<std::int64_t> m_cached{0};
    // Prefix caching: kept blocks, [layers, 2, 1, heads, block, head_dim] each.
    KeptBlocks<at::Tensor> m_kept;
};

} // namespace

bool isDecoderSchema(const c10::FunctionSchema &schema)
{
    const auto &args = schema.arguments(); // args[0] is self
    if (args.size() != 4 || !isTensorType(args[1].type()) || !isTensorType(args[2].type()))
        return false;
    const auto optional = args[3].type()->cast<c10::OptionalType>();
    if (!optional || !isTensorType(optional->getElementType()))
        return false;
    if (schema.returns().size() != 1)
        return false;
    const auto tuple = schema.returns()[0].type()->cast<c10::TupleType>();
    return tuple && tuple->elements().size() == 2 && isTensorType(tuple->elements()[0]) &&
           isTensorType(tuple->elements()[1]);
}

Result<std::shared_ptr<Backend>> makeTorchScriptDecoder(torch::jit::Module module, ModelInfo info,
                                                        const TorchPlacement &placement)
{
    const std::string path = info.name;
    if (info.maxSequenceLength < 3)
        return Status(StatusCode::InvalidArgument, "TorchScript decoder '" + path +
                                                       "': " + std::to_string(info.maxSequenceLength) +
                                                       " positions leave no room to generate");
    // Probe: two sequences (2 and 1 tokens), then one more token each on their cache.
    try {
        c10::InferenceMode guard;
        Sequence a, b;
        const std::vector<TokenId> two = {1, 1}, one = {1};
        Forwarded f = forwardRows(module, placement.atDevice, {&a, &b}, {&two, &one});
        a = {f.caches[0], 2};
        b = {f.caches[1], 1};
        f = forwardRows(module, placement.atDevice, {&a, &b}, {&one, &one});
        if (f.caches[0].size(4) != 3 || f.caches[1].size(4) != 2)
            return Status(StatusCode::InvalidArgument,
                          "TorchScript decoder '" + path + "': present did not grow by the new tokens");
    } catch (const c10::Error &e) {
        std::string what = e.what_without_backtrace();
        what.resize(std::min(what.size(), what.find('\n')));
        return Status(StatusCode::InvalidArgument,
                      "TorchScript decoder '" + path + "' fails the step contract on a probe step: " + what);
    } catch (const std::exception &e) {
        return Status(StatusCode::InvalidArgument,
                      "TorchScript decoder '" + path +
                          "' fails the step contract on a probe step: " + e.what());
    }
    info.description = "TorchScript decoder; forward(input_ids, attention_mask, past_key_values) -> (logits, "
                       "present); greedy generation, step-level; " +
                       info.description;
    return buildTorchBackend<Backend, TorchScriptDecoder>("TorchScript decoder '" + path + "'",
                                                          std::move(module), std::move(info), placement);
}

} // namespace bp
