#include "tiny_encoder.h"
#include "cpu_blas.h"

#include "preset_backend.h"
#include "transformer_layers.h"

#include <ATen/CPUGeneratorImpl.h>

namespace bp {

namespace {

class TinyEncoder final : public TorchBackend<> {
public:
    TinyEncoder(const TransformerShape &shape, const TorchPlacement &placement, std::uint64_t seed)
        : TorchBackend(placement), m_shape(shape)
    {
        at::Generator gen = at::detail::createCPUGenerator(seed);
        m_weights = initTrunk(shape, gen, m_device, placement.dtype);
        const std::int64_t d = shape.dModel;
        m_headWeight =
            at::normal(0.0, 0.02, {shape.classes, d}, gen, at::kFloat).to(m_device, placement.dtype);
        m_headBias = at::zeros({shape.classes}, at::kFloat).to(m_device, placement.dtype);

        m_info.name = "builtin:tiny-encoder";
        m_info.vocabSize = shape.vocab;
        m_info.maxSequenceLength = shape.maxPositions;
        m_info.generative = false;
        m_info.parameters = countParameters(m_weights) + m_headWeight.numel() + m_headBias.numel();
        m_info.description = "transformer encoder classifier, preset '" + shape.preset +
                             "': " + std::to_string(shape.layers) + " layers, d_model " +
                             std::to_string(shape.dModel) + ", " + std::to_string(shape.heads) + " heads, " +
                             std::to_string(shape.classes) + " class logits; seeded random weights";
    }

    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        return guarded(
            [&] {
                return "builtin:tiny-encoder failed on a batch of " + std::to_string(input.requests.size());
            },
            [&] { return forward(input, out); });
    }

private:
    Status forward(const BatchInput &input, std::vector<SequenceResult> &out)
    {
        std::vector<const std::vector<TokenId> *> rows;
        rows.reserve(input.requests.size());
        int longest = 0;
        for (const Request *r : input.requests) {
            rows.push_back(&r->tokens);
            longest = std::max(longest, int(r->tokens.size()));
        }
        if (rows.empty())
            return Status::ok();
        // The policy's padded shape (padding costs compute, never positions).
        const int L = std::max(longest, input.paddedLength);

        const PaddedBatch batch = makeLeftPaddedBatch(rows, L, m_device);
        const at::Tensor bias = keyPaddingBias(batch.mask);
        at::Tensor x = embed(m_weights, batch.ids, batch.positions);
        for (const auto &block : m_weights.blocks)
            x = blockForward(block, m_shape, x, bias);
        x = finalNorm(m_weights, x);
        // mean over the real tokens only
        const at::Tensor maskF = batch.mask.unsqueeze(-1).to(x.scalar_type());
        const at::Tensor pooled = (x * maskF).sum(1) / batch.lengths.unsqueeze(-1).to(x.scalar_type());
        const at::Tensor logits =
            bp::linear(pooled, m_headWeight, m_headBias).to(at::kFloat).to(at::kCPU).contiguous();

        const float *p = logits.data_ptr<float>();
        const std::size_t classes = std::size_t(m_shape.classes);
        for (std::size_t i = 0; i < rows.size(); ++i)
            out[i].values.assign(p + i * classes, p + (i + 1) * classes);
        return Status::ok();
    }

    TransformerShape m_shape;
    TrunkWeights m_weights;
    at::Tensor m_headWeight, m_headBias;
};

} // namespace

Result<std::shared_ptr<Backend>> makeTinyEncoder(const ModelSpec &spec)
{
    return makePresetBackend<Backend, TinyEncoder>("builtin:tiny-encoder", spec);
}

} // namespace bp
