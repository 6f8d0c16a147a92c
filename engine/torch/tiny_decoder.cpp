#include "tiny_decoder.h"

#include "engine/core/nvtx.h"

#include "paged_model.h"
#include "preset_backend.h"
#include "transformer_layers.h"

#include <ATen/CPUGeneratorImpl.h>

namespace bp {

namespace {

class TinyDecoder final : public PagedModel {
public:
    TinyDecoder(const TransformerShape &shape, const TorchPlacement &placement, std::uint64_t seed)
        : PagedModel(placement, "builtin:tiny-decoder", m_trunk,
                     KvPoolShape{shape.layers, shape.heads, shape.headDim(), placement.dtype},
                     shape.maxPositions, shape.vocab),
          m_shape(shape), m_trunk(shape, m_weights)
    {
        at::Generator gen = at::detail::createCPUGenerator(seed);
        m_weights = initTrunk(shape, gen, m_device, placement.dtype);
        m_info.name = "builtin:tiny-decoder";
        m_info.architecture = "GPT-2 (pre-LN, tied LM head)";
        m_info.vocabSize = shape.vocab;
        m_info.maxSequenceLength = shape.maxPositions - 1; // room for at least one generated token
        m_info.generative = true;
        m_info.maxNewTokensLimit = shape.maxPositions - 1;
        m_info.parameters = countParameters(m_weights);
        m_info.description = "GPT-style decoder with a paged KV cache, preset '" + shape.preset +
                             "': " + std::to_string(shape.layers) + " layers, d_model " +
                             std::to_string(shape.dModel) + ", " + std::to_string(shape.heads) +
                             " heads, vocab " + std::to_string(shape.vocab) + ", " + m_info.dtype +
                             "; greedy generation, seeded random weights";
    }

private:
    // Request::onToken for the token just appended to `tokens` (streaming).
    static void reportToken(const Request &r, const std::vector<TokenId> &tokens)
    {
        if (r.onToken)
            r.onToken(TokenEvent{r.id, tokens.back(), int(tokens.size()) - 1, SteadyClock::now()});
    }

    // The reference: no cache, no pool; every step runs the full (input +
    // generated) sequence through the trunk, left-padded, and reads the
    // last column.
    Status generateRecomputing(const GenerationPlan &plan, const GenerateOptions &options,
                               std::vector<Generation> &out) const override
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
            const at::Tensor logits = tiedLmHead(m_weights, x.select(1, x.size(1) - 1)).to(at::kFloat);
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
        return Status::ok();
    }

    TransformerShape m_shape;
    TrunkWeights m_weights;
    Gpt2PagedTrunk m_trunk; // reads m_weights; the base holds a reference to it
};

} // namespace

Result<std::shared_ptr<DecoderModel>> makeTinyDecoder(const ModelSpec &spec)
{
    return makePresetBackend<DecoderModel, TinyDecoder>("builtin:tiny-decoder", spec);
}

} // namespace bp
