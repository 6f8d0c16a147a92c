#include "transformer_layers.h"
#include "cpu_blas.h"

#include "kernels/paged_attention.h"

#include <cmath>
#include <limits>

namespace bp {

namespace {

at::Tensor normal(at::Generator &gen, at::IntArrayRef size, double stddev)
{
    return at::normal(0.0, stddev, size, gen, at::TensorOptions().dtype(at::kFloat));
}

at::Tensor zeros(at::IntArrayRef size) { return at::zeros(size, at::kFloat); }
at::Tensor ones(at::IntArrayRef size) { return at::ones(size, at::kFloat); }

} // namespace

at::Device toAtDevice(const TorchDevice &device)
{
    return device.cuda ? at::Device(at::kCUDA, at::DeviceIndex(device.index)) : at::Device(at::kCPU);
}

TrunkWeights initTrunk(const TransformerShape &s, at::Generator &gen, const at::Device &device, at::ScalarType dtype)
{
    const std::int64_t d = s.dModel, f = s.dFF;
    const double std = 0.02, residualStd = 0.02 / std::sqrt(2.0 * s.layers);
    TrunkWeights w;
    w.tokenEmbedding = normal(gen, {s.vocab, d}, std);
    w.positionEmbedding = normal(gen, {s.maxPositions, d}, 0.01);
    for (int l = 0; l < s.layers; ++l) {
        BlockWeights b;
        b.ln1Weight = ones({d});
        b.ln1Bias = zeros({d});
        b.qkvWeight = normal(gen, {3 * d, d}, std);
        b.qkvBias = zeros({3 * d});
        b.projWeight = normal(gen, {d, d}, residualStd);
        b.projBias = zeros({d});
        b.ln2Weight = ones({d});
        b.ln2Bias = zeros({d});
        b.fc1Weight = normal(gen, {f, d}, std);
        b.fc1Bias = zeros({f});
        b.fc2Weight = normal(gen, {d, f}, residualStd);
        b.fc2Bias = zeros({d});
        w.blocks.push_back(std::move(b));
    }
    w.lnFWeight = ones({d});
    w.lnFBias = zeros({d});
    if (device.type() != at::kCPU || dtype != at::kFloat) {
        auto move = [&](at::Tensor &t) { t = t.to(device, dtype); };
        move(w.tokenEmbedding);
        move(w.positionEmbedding);
        for (auto &b : w.blocks)
            for (at::Tensor *t : {&b.ln1Weight, &b.ln1Bias, &b.qkvWeight, &b.qkvBias, &b.projWeight, &b.projBias,
                                  &b.ln2Weight, &b.ln2Bias, &b.fc1Weight, &b.fc1Bias, &b.fc2Weight, &b.fc2Bias})
                move(*t);
        move(w.lnFWeight);
        move(w.lnFBias);
    }
    return w;
}

std::int64_t countParameters(const TrunkWeights &w)
{
    std::int64_t n = w.tokenEmbedding.numel() + w.positionEmbedding.numel() + w.lnFWeight.numel() +
                     w.lnFBias.numel();
    for (const auto &b : w.blocks)
        for (const at::Tensor *t : {&b.ln1Weight, &b.ln1Bias, &b.qkvWeight, &b.qkvBias, &b.projWeight, &b.projBias,
                                    &b.ln2Weight, &b.ln2Bias, &b.fc1Weight, &b.fc1Bias, &b.fc2Weight, &b.fc2Bias})
            n += t->numel();
    return n;
}

PaddedBatch makeLeftPaddedBatch(const std::vector<const std::vector<std::int32_t> *> &rows, int paddedLength,
                                const at::Device &device)
{
    const auto B = std::int64_t(rows.size()), L = std::int64_t(paddedLength);
    // One contiguous host buffer per tensor, filled row by row; two tensor
    // copies per batch, none per request.
    at::Tensor ids = at::zeros({B, L}, at::kLong);
    at::Tensor mask = at::zeros({B, L}, at::kBool);
    auto *idp = ids.data_ptr<std::int64_t>();
    auto *mp = mask.data_ptr<bool>();
    for (std::int64_t i = 0; i < B; ++i) {
        const auto &tokens = *rows[std::size_t(i)];
        const std::int64_t n = std::int64_t(tokens.size()), offset = L - n;
        for (std::int64_t j = 0; j < n; ++j) {
            idp[i * L + offset + j] = tokens[std::size_t(j)];
            mp[i * L + offset + j] = true;
        }
    }
    PaddedBatch batch;
    batch.ids = ids.to(device);
    batch.mask = mask.to(device);
    batch.positions = (batch.mask.to(at::kLong).cumsum(1) - 1).clamp_min(0);
    batch.lengths = batch.mask.sum(1, false, at::kLong);
    return batch;
}

at::Tensor keyPaddingBias(const at::Tensor &mask)
{
    at::Tensor bias = at::zeros({mask.size(0), 1, 1, mask.size(1)}, mask.options().dtype(at::kFloat));
    bias.masked_fill_(mask.logical_not().view({mask.size(0), 1, 1, mask.size(1)}),
                      -std::numeric_limits<float>::infinity());
    return bias;
}

at::Tensor causalBias(const at::Tensor &mask)
{
    const std::int64_t B = mask.size(0), L = mask.size(1);
    const auto opts = mask.options().dtype(at::kBool);
    at::Tensor causal = at::ones({L, L}, opts).tril();
    at::Tensor allowed = causal.view({1, 1, L, L}).logical_and(mask.view({B, 1, 1, L}));
    allowed = allowed.logical_or(at::eye(L, opts).view({1, 1, L, L}));
    at::Tensor bias = at::zeros({B, 1, L, L}, mask.options().dtype(at::kFloat));
    bias.masked_fill_(allowed.logical_not(), -std::numeric_limits<float>::infinity());
    return bias;
}

at::Tensor embed(const TrunkWeights &w, const at::Tensor &ids, const at::Tensor &positions)
{
    return at::embedding(w.tokenEmbedding, ids).add_(at::embedding(w.positionEmbedding, positions));
}

at::Tensor blockForward(const BlockWeights &w, const TransformerShape &shape, const at::Tensor &x,
                        const at::Tensor &bias)
{
    const std::int64_t B = x.size(0), T = x.size(1), d = shape.dModel, H = shape.heads, hd = shape.headDim();
    at::Tensor h = at::layer_norm(x, {d}, w.ln1Weight, w.ln1Bias, 1e-5);
    at::Tensor qkv = bp::linear(h, w.qkvWeight, w.qkvBias).view({B, T, 3, H, hd}).permute({2, 0, 3, 1, 4});
    at::Tensor q = qkv[0].mul(1.0 / std::sqrt(double(hd))); // [B, H, T, hd]
    const at::Tensor k = qkv[1], v = qkv[2];
    at::Tensor scores = at::matmul(q, k.transpose(-2, -1)).add_(bias.to(q.scalar_type())); // [B, H, T, S]
    at::Tensor attended = at::matmul(at::softmax(scores, -1), v);      // [B, H, T, hd]
    attended = attended.transpose(1, 2).reshape({B, T, d});
    at::Tensor out = x + bp::linear(attended, w.projWeight, w.projBias);
    at::Tensor h2 = at::layer_norm(out, {d}, w.ln2Weight, w.ln2Bias, 1e-5);
    out.add_(bp::linear(at::gelu(bp::linear(h2, w.fc1Weight, w.fc1Bias), "tanh"), w.fc2Weight, w.fc2Bias));
    return out;
}

at::Tensor finalNorm(const TrunkWeights &w, const at::Tensor &x)
{
    return at::layer_norm(x, {x.size(-1)}, w.lnFWeight, w.lnFBias, 1e-5);
}

at::Tensor tiedLmHead(const TrunkWeights &w, const at::Tensor &hidden)
{
    return bp::linear(finalNorm(w, hidden), w.tokenEmbedding);
}

at::Tensor Gpt2PagedTrunk::logits(const StepTensors &step, KvPool &pool) const
{
    const std::int64_t T = step.tokens, d = m_shape.dModel, H = m_shape.heads, hd = m_shape.headDim();
    const double scale = 1.0 / std::sqrt(double(hd));
    const TrunkWeights &w = m_weights;
    at::Tensor x = at::embedding(w.tokenEmbedding, step.ids).add_(at::embedding(w.positionEmbedding, step.positions));
    for (std::size_t l = 0; l < w.blocks.size(); ++l) {
        const BlockWeights &b = w.blocks[l];
        const at::Tensor h = at::layer_norm(x, {d}, b.ln1Weight, b.ln1Bias, 1e-5);
        const at::Tensor qkv = bp::linear(h, b.qkvWeight, b.qkvBias).view({T, 3, H, hd});
        writeKv(pool.keys(int(l)), pool.values(int(l)), qkv.select(1, 1), qkv.select(1, 2), step.slots);
        const at::Tensor attended = pagedAttention(qkv.select(1, 0), pool.keys(int(l)), pool.values(int(l)),
                                                   step.blockTables, step.querySeq, step.positions,
                                                   pool.blockTokens(), scale);
        x.add_(bp::linear(attended.view({T, d}), b.projWeight, b.projBias));
        const at::Tensor h2 = at::layer_norm(x, {d}, b.ln2Weight, b.ln2Bias, 1e-5);
        x.add_(bp::linear(at::gelu(bp::linear(h2, b.fc1Weight, b.fc1Bias), "tanh"), b.fc2Weight, b.fc2Bias));
    }
    return tiedLmHead(w, x.index_select(0, step.sampleRows));
}

} // namespace bp
