#include "tiny_encoder.h"

#include "transformer_layers.h"

#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/InferenceMode.h>

namespace bp {

namespace {

class TinyEncoder final : public Backend {
public:
    TinyEncoder(const TransformerShape &shape, const TorchDevice &device, int threads, std::uint64_t seed)
        : m_shape(shape), m_device(toAtDevice(device)), m_threads(threads)
    {
        c10::InferenceMode guard;
        at::Generator gen = at::detail::createCPUGenerator(seed);
        m_weights = initTrunk(shape, gen, m_device);
        const std::int64_t d = shape.dModel;
        m_headWeight = at::normal(0.0, 0.02, {shape.classes, d}, gen, at::kFloat).to(m_device);
        m_headBias = at::zeros({shape.classes}, at::kFloat).to(m_device);

        m_info.name = "builtin:tiny-encoder";
        m_info.device = device.name;
        m_info.vocabSize = shape.vocab;
        m_info.maxSequenceLength = shape.maxPositions;
        m_info.generative = false;
        m_info.parameters = countParameters(m_weights) + m_headWeight.numel() + m_headBias.numel();
        m_info.description = "transformer encoder classifier, preset '" + shape.preset + "': " +
                             std::to_string(shape.layers) + " layers, d_model " + std::to_string(shape.dModel) +
                             ", " + std::to_string(shape.heads) + " heads, " + std::to_string(shape.classes) +
                             " class logits; seeded random weights";
    }

    const ModelInfo &info() const override { return m_info; }

    std::optional<int> probeMaxBatch(int paddedLength, int upTo) override
    {
        if (m_device.is_cpu())
            return std::nullopt; // host memory is not the limit here
        return probeLargestBatch(*this, paddedLength, upTo);
    }

    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override
    {
        try {
            return forward(input, out);
        } catch (const std::exception &e) {
            return torchFailure("builtin:tiny-encoder failed on a batch of " + std::to_string(input.requests.size()), e);
        }
    }

private:
    Status forward(const BatchInput &input, std::vector<SequenceResult> &out)
    {
        useTorchThreads(m_threads);
        c10::InferenceMode guard;
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
        const at::Tensor maskF = batch.mask.unsqueeze(-1).to(at::kFloat);
        const at::Tensor pooled = (x * maskF).sum(1) / batch.lengths.unsqueeze(-1).to(at::kFloat);
        const at::Tensor logits = at::linear(pooled, m_headWeight, m_headBias).to(at::kCPU).contiguous();

        const float *p = logits.data_ptr<float>();
        const std::size_t classes = std::size_t(m_shape.classes);
        for (std::size_t i = 0; i < rows.size(); ++i)
            out[i].values.assign(p + i * classes, p + (i + 1) * classes);
        return Status::ok();
    }

    TransformerShape m_shape;
    at::Device m_device;
    int m_threads;
    TrunkWeights m_weights;
    at::Tensor m_headWeight, m_headBias;
    ModelInfo m_info;
};

} // namespace

Result<std::shared_ptr<Backend>> makeTinyEncoder(const ModelSpec &spec)
{
    auto shape = transformerPreset(spec.preset);
    if (!shape)
        return shape.status();
    auto device = resolveTorchDevice(spec.device);
    if (!device)
        return device.status();
    const int threads = resolveTorchThreads(spec.threads);
    useTorchThreads(threads);
    keepHostMemoryMapped();
    try {
        return std::shared_ptr<Backend>(std::make_shared<TinyEncoder>(*shape, *device, threads, spec.seed));
    } catch (const std::exception &e) {
        return Status(StatusCode::ResourceExhausted,
                      "cannot build builtin:tiny-encoder (" + spec.preset + ") on " + device->name + ": " + e.what());
    }
}

} // namespace bp
