#include "tiny_decoder.h"

#include "engine/core/nvtx.h"

#include "torch_backend.h"
#include "transformer_layers.h"
#include "trunk_steps.h"

#include <ATen/CPUGeneratorImpl.h>

namespace bp {

namespace {

// Per-call bookkeeping of a generation: which requests take part and how
// many tokens each still needs. Plain C++; the tensors live in generate*().
struct Plan {
    std::vector<std::size_t> members; // request indices that run, in batch order
    std::vector<int> want;            // tokens each member asks for (>= 1)
    std::vector<const std::vector<TokenId> *> rows;
    std::vector<const Request *> requests; // every request of the batch (Request::onToken)
    int paddedLength = 0;
    int maxWant = 0;
};

class TinyDecoder final : public TorchBackend<DecoderModel> {
public:
    TinyDecoder(const TransformerShape &shape, const TorchPlacement &placement, std::uint64_t seed)
        : TorchBackend(placement), m_shape(shape),
          m_steps("builtin:tiny-decoder", shape, m_weights, placement.atDevice, placement.threads)
    {
        at::Generator gen = at::detail::createCPUGenerator(seed);
        m_weights = initTrunk(shape, gen, m_device);
        m_info.name = "builtin:tiny-decoder";
        m_info.vocabSize = shape.vocab;
        m_info.maxSequenceLength = shape.maxPositions - 1; // room for at least one generated token
        m_info.generative = true;
        m_info.maxNewTokensLimit = shape.maxPositions - 1;
        m_info.parameters = countParameters(m_weights);
        m_info.description = "GPT-style decoder with a KV cache, preset '" + shape.preset +
                             "': " + std::to_string(shape.layers) + " layers, d_model " +
                             std::to_string(shape.dModel) + ", " + std::to_string(shape.heads) +
                             " heads, vocab " + std::to_string(shape.vocab) +
                             "; greedy generation, seeded random weights";
    }

    StepModel *steps() override { return &m_steps; }

    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        std::vector<Generation> gens;
        Status s = generate(input, GenerateOptions{}, gens);
        if (!s)
            return s;
        for (std::size_t i = 0; i < gens.size(); ++i) {
            out[i].status = std::move(gens[i].status);
            out[i].tokens = std::move(gens[i].tokens);
            out[i].firstTokenAfter = gens[i].firstTokenAfter;
            out[i].lastTokenAfter = gens[i].lastTokenAfter;
        }
        return Status::ok();
    }

    Status generate(const BatchInput &input, const GenerateOptions &options,
                    std::vector<Generation> &out) override
    {
        out.assign(input.requests.size(), Generation{});
        const Plan plan = makePlan(input, out);
        if (plan.members.empty())
            return Status::ok();
        return guarded(
            [&] {
                return "builtin:tiny-decoder failed on a batch of " + std::to_string(plan.members.size());
            },
            [&] {
                if (options.useKvCache)
                    generateCached(plan, options, out);
                else
                    generateRecomputing(plan, options, out);
                return Status::ok();
            });
    }

private:
    Plan makePlan(const BatchInput &input, std::vector<Generation> &out) const
    {
        Plan plan;
        plan.requests = input.requests;
        for (std::size_t i = 0; i < input.requests.size(); ++i) {
            const Request &r = *input.requests[i];
            const int want = std::max(1, r.maxNewTokens);
            const int length = int(r.tokens.size());
            if (length < 1) {
                out[i].status = Status(StatusCode::InvalidArgument, "empty input sequence");
                continue;
            }
            if (length + want > m_shape.maxPositions) {
                out[i].status = Status(StatusCode::OutOfRange,
                                       "input of " + std::to_string(length) + " tokens + " +
                                           std::to_string(want) + " new tokens exceeds the model's " +
                                           std::to_string(m_shape.maxPositions) + " positions");
                continue;
            }
            plan.members.push_back(i);
            plan.want.push_back(want);
            plan.rows.push_back(&r.tokens);
            plan.paddedLength = std::max(plan.paddedLength, length);
            plan.maxWant = std::max(plan.maxWant, want);
        }
        // Honour the policy's padded shape (static pads to a fixed length):
        // padding costs compute, never positions (they count real tokens).
        plan.paddedLength = std::max(plan.paddedLength, input.paddedLength);
        return plan;
    }

    at::Tensor lmHead(const at::Tensor &lastHidden) const
    {
        return tiedLmHead(m_weights, lastHidden);
    } // [b, vocab]

    // Request::onToken for the token just appended to `tokens` (streaming).
    static void reportToken(const Request &r, const std::vector<TokenId> &tokens)
    {
        if (r.onToken)
            r.onToken(TokenEvent{r.id, tokens.back(), int(tokens.size()) - 1, SteadyClock::now()});
    }

    static void appendLogits(const at::Tensor &logits, const std::vector<std::size_t> &requestOfRow,
                             const std::vector<int> &remaining, std::vector<Generation> &out)
    {
        const at::Tensor cpu = logits.to(at::kCPU).contiguous();
        const float *p = cpu.data_ptr<float>();
        const auto vocab = std::size_t(cpu.size(1));
        for (std::size_t r = 0; r < requestOfRow.size(); ++r)
            if (remaining[r] > 0)
                out[requestOfRow[r]].logits.emplace_back(p + r * vocab, p + (r + 1) * vocab);
    }

    void generateCached(const Plan &plan, const GenerateOptions &options, std::vector<Generation> &out) const
    {
        const TimePoint start = SteadyClock::now();
        const std::int64_t L = plan.paddedLength, H = m_shape.heads, hd = m_shape.headDim();
        const std::int64_t capacity = L + plan.maxWant - 1; // the last token is never fed back
        const PaddedBatch batch = makeLeftPaddedBatch(plan.rows, plan.paddedLength, m_device);
        std::int64_t B = batch.ids.size(0);

        // Prefill: the whole padded batch at once, filling every layer's cache.
        std::vector<LayerCache> cache(m_weights.blocks.size());
        const auto fopts = at::TensorOptions().dtype(at::kFloat).device(m_device);
        for (auto &c : cache) {
            c.keys = at::empty({B, H, capacity, hd}, fopts);
            c.values = at::empty({B, H, capacity, hd}, fopts);
        }
        at::Tensor logits;
        at::Tensor x;
        {
            const nvtx::Range range(nvtx::Category::Backend, [&] {
                return "prefill b=" + std::to_string(B) + " L=" + std::to_string(L);
            });
            x = embed(m_weights, batch.ids, batch.positions);
            const at::Tensor prefillBias = causalBias(batch.mask);
            for (std::size_t l = 0; l < m_weights.blocks.size(); ++l)
                x = blockForward(m_weights.blocks[l], m_shape, x, prefillBias, &cache[l], 0);
            logits = lmHead(x.select(1, L - 1));
        }

        // Decode-step state, compacted as members finish.
        at::Tensor keyBias = at::zeros({B, 1, 1, capacity}, fopts);
        keyBias.narrow(3, 0, L).copy_(keyPaddingBias(batch.mask));
        at::Tensor position = batch.lengths.clone(); // next token's position per row
        std::vector<std::size_t> requestOfRow = plan.members;
        std::vector<int> remaining = plan.want;

        for (int step = 0;; ++step) {
            if (options.keepLogits)
                appendLogits(logits, requestOfRow, remaining, out);
            at::Tensor next = logits.argmax(-1); // [B]
            const at::Tensor nextCpu = next.to(at::kCPU);
            const auto *ids = nextCpu.data_ptr<std::int64_t>();
            const Duration now = SteadyClock::now() - start;
            std::vector<std::int64_t> keep;
            keep.reserve(requestOfRow.size());
            for (std::size_t r = 0; r < requestOfRow.size(); ++r) {
                if (remaining[r] == 0)
                    continue; // finished earlier; still in the batch only without compaction
                Generation &g = out[requestOfRow[r]];
                g.tokens.push_back(TokenId(ids[r]));
                reportToken(*plan.requests[requestOfRow[r]], g.tokens);
                if (step == 0)
                    g.firstTokenAfter = now;
                if (--remaining[r] == 0)
                    g.lastTokenAfter = now;
                else
                    keep.push_back(std::int64_t(r));
            }
            if (keep.empty())
                break;
            if (options.compact && std::int64_t(keep.size()) < B) {
                const at::Tensor index = at::tensor(keep, at::kLong).to(m_device);
                for (auto &c : cache) {
                    c.keys = c.keys.index_select(0, index);
                    c.values = c.values.index_select(0, index);
                }
                keyBias = keyBias.index_select(0, index);
                position = position.index_select(0, index);
                next = next.index_select(0, index);
                std::vector<std::size_t> rows;
                std::vector<int> left;
                for (std::int64_t r : keep) {
                    rows.push_back(requestOfRow[std::size_t(r)]);
                    left.push_back(remaining[std::size_t(r)]);
                }
                requestOfRow = std::move(rows);
                remaining = std::move(left);
                B = std::int64_t(keep.size());
            }
            // One decode step: the new token of every running row.
            const nvtx::Range range(nvtx::Category::Backend, [&] {
                return "decode step=" + std::to_string(step + 1) + " b=" + std::to_string(B);
            });
            const std::int64_t offset = L + step; // cache slot of the token fed now
            x = embed(m_weights, next.unsqueeze(1), position.unsqueeze(1));
            const at::Tensor bias = keyBias.narrow(3, 0, offset + 1);
            for (std::size_t l = 0; l < m_weights.blocks.size(); ++l)
                x = blockForward(m_weights.blocks[l], m_shape, x, bias, &cache[l], offset);
            logits = lmHead(x.select(1, 0));
            position.add_(1);
        }
    }

    // The reference: no cache; every step runs the full (input + generated)
    // sequence through the trunk and reads the last column.
    void generateRecomputing(const Plan &plan, const GenerateOptions &options,
                             std::vector<Generation> &out) const
    {
        const TimePoint start = SteadyClock::now();
        std::vector<std::vector<TokenId>> sequences;
        for (const auto *row : plan.rows)
            sequences.push_back(*row);
        std::vector<int> remaining = plan.want;
        for (int step = 0; step < plan.maxWant; ++step) {
            std::vector<const std::vector<TokenId> *> rows;
            for (const auto &s : sequences)
                rows.push_back(&s);
            const PaddedBatch batch = makeLeftPaddedBatch(rows, plan.paddedLength + step, m_device);
            at::Tensor x = embed(m_weights, batch.ids, batch.positions);
            const at::Tensor bias = causalBias(batch.mask);
            for (const auto &block : m_weights.blocks)
                x = blockForward(block, m_shape, x, bias);
            const at::Tensor logits = lmHead(x.select(1, x.size(1) - 1));
            const at::Tensor next = logits.argmax(-1).to(at::kCPU);
            const Duration now = SteadyClock::now() - start;
            const at::Tensor logitsCpu = options.keepLogits ? logits.to(at::kCPU).contiguous() : at::Tensor();
            for (std::size_t r = 0; r < plan.members.size(); ++r) {
                if (remaining[r] <= 0)
                    continue; // finished: its row still runs (no compaction here), unused
                Generation &g = out[plan.members[r]];
                const auto id = TokenId(next.data_ptr<std::int64_t>()[r]);
                g.tokens.push_back(id);
                reportToken(*plan.requests[plan.members[r]], g.tokens);
                sequences[r].push_back(id);
                if (options.keepLogits) {
                    const float *p = logitsCpu.data_ptr<float>() + std::int64_t(r) * logitsCpu.size(1);
                    g.logits.emplace_back(p, p + logitsCpu.size(1));
                }
                if (step == 0)
                    g.firstTokenAfter = now;
                if (--remaining[r] == 0)
                    g.lastTokenAfter = now;
            }
        }
    }

    TransformerShape m_shape;
    TrunkWeights m_weights;
    TrunkStepModel m_steps; // reads m_weights
};

} // namespace

Result<std::shared_ptr<DecoderModel>> makeTinyDecoder(const ModelSpec &spec)
{
    auto shape = transformerPreset(spec.preset);
    if (!shape)
        return shape.status();
    auto placement = prepareTorch(spec);
    if (!placement)
        return placement.status();
    return buildTorchBackend<DecoderModel, TinyDecoder>("builtin:tiny-decoder (" + spec.preset + ") on " +
                                                            placement->device.name,
                                                        *shape, *placement, spec.seed);
}

} // namespace bp
