#include "gemma3_model.h"
#include "cpu_blas.h"

#include "kernels/paged_attention.h"
#include "paged_model.h"

#include <cmath>

namespace bp {

namespace {

struct Gemma3Layer {
    // Norm weights are (1 + weight) in float32, as transformers' Gemma3RMSNorm uses them.
    at::Tensor inNorm, qkvW, qNorm, kNorm, oW, postAttnNorm, preFfnNorm, gateUpW, downW, postFfnNorm;
    std::int64_t window = 0; // 0: a global layer
    bool local = false;      // which rotary table
};

struct Gemma3Weights {
    at::Tensor embed, embedScale, norm;
    std::vector<Gemma3Layer> layers;
    at::Tensor globalCos, globalSin, localCos, localSin; // [positions, headDim]
};

// Gemma3RMSNorm: x / rms(x) * (1 + weight), in float32, then x's dtype.
at::Tensor gemmaNorm(const at::Tensor &x, const at::Tensor &onePlusWeight, double eps)
{
    const at::Tensor xf = x.to(at::kFloat);
    return (xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps) * onePlusWeight).to(x.scalar_type());
}

// x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x2, x1); cos/sin [T, 1, D].
at::Tensor rotary(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin)
{
    const std::int64_t half = x.size(-1) / 2;
    const at::Tensor rotated = at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
}

// transformers' default inverse frequencies, divided by a linear factor; the
// position x frequency table in float32, both halves, cos and sin in the dtype.
std::pair<at::Tensor, at::Tensor> rotaryTables(double theta, double factor, std::int64_t D,
                                               std::int64_t positions, const at::TensorOptions &options)
{
    at::Tensor inv =
        1.0 /
        at::pow(theta, at::arange(0, D, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / double(D));
    if (factor != 1)
        inv = inv / factor;
    const at::Tensor freqs = at::outer(at::arange(positions, at::TensorOptions().dtype(at::kFloat)), inv);
    const at::Tensor emb = at::cat({freqs, freqs}, -1);
    return {emb.cos().to(options), emb.sin().to(options)};
}

Gemma3Weights loadGemma3(const HfModelConfig &c, WeightSource &src, const at::TensorOptions &options)
{
    const Gemma3Shape &g = *c.gemma3;
    const std::int64_t d = c.hiddenSize, f = c.intermediateSize, D = c.headDim, q = std::int64_t(c.heads) * D,
                       kv = std::int64_t(c.kvHeads) * D, V = c.vocabSize;
    auto norm = [&](const std::string &name, std::int64_t n) {
        return src.get(name, {n}).to(at::kFloat) + 1.0;
    };
    Gemma3Weights w;
    w.embed = src.get("model.embed_tokens.weight", {V, d});
    // Gemma3TextScaledWordEmbedding: a float32 sqrt(hidden) cast to the weights' dtype
    w.embedScale = at::scalar_tensor(std::sqrt(double(d)), options.dtype(at::kFloat)).to(options.dtype());
    for (int l = 0; l < c.layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        Gemma3Layer L;
        L.inNorm = norm(p + "input_layernorm.weight", d);
        L.qkvW = at::cat({src.get(p + "self_attn.q_proj.weight", {q, d}),
                          src.get(p + "self_attn.k_proj.weight", {kv, d}),
                          src.get(p + "self_attn.v_proj.weight", {kv, d})},
                         0);
        L.qNorm = norm(p + "self_attn.q_norm.weight", D);
        L.kNorm = norm(p + "self_attn.k_norm.weight", D);
        L.oW = src.get(p + "self_attn.o_proj.weight", {d, q});
        L.postAttnNorm = norm(p + "post_attention_layernorm.weight", d);
        L.preFfnNorm = norm(p + "pre_feedforward_layernorm.weight", d);
        L.gateUpW = at::cat(
            {src.get(p + "mlp.gate_proj.weight", {f, d}), src.get(p + "mlp.up_proj.weight", {f, d})}, 0);
        L.downW = src.get(p + "mlp.down_proj.weight", {d, f});
        L.postFfnNorm = norm(p + "post_feedforward_layernorm.weight", d);
        L.window = g.layerWindows[std::size_t(l)];
        L.local = g.localTypes[std::size_t(l)];
        w.layers.push_back(std::move(L));
    }
    w.norm = norm("model.norm.weight", d);
    std::tie(w.globalCos, w.globalSin) =
        rotaryTables(g.globalRopeTheta, g.globalRopeFactor, D, c.maxPositions, options);
    std::tie(w.localCos, w.localSin) =
        rotaryTables(g.localRopeTheta, g.localRopeFactor, D, c.maxPositions, options);
    return w;
}

class Gemma3Trunk final : public PagedTrunk {
public:
    Gemma3Trunk(const HfModelConfig &config, const Gemma3Weights &weights) : m_c(config), m_w(weights) {}

    at::Tensor logits(const StepTensors &step, KvPool &pool) const override
    {
        const std::int64_t T = step.tokens, D = m_c.headDim, H = m_c.heads, Hkv = m_c.kvHeads,
                           f = m_c.intermediateSize;
        const Gemma3Shape &g = *m_c.gemma3;
        const double scale = 1.0 / std::sqrt(g.queryPreAttnScalar), eps = m_c.rmsEps;
        at::Tensor x = at::embedding(m_w.embed, step.ids).mul(m_w.embedScale);
        const at::Tensor cosG = m_w.globalCos.index_select(0, step.positions).unsqueeze(1);
        const at::Tensor sinG = m_w.globalSin.index_select(0, step.positions).unsqueeze(1);
        const at::Tensor cosL = m_w.localCos.index_select(0, step.positions).unsqueeze(1);
        const at::Tensor sinL = m_w.localSin.index_select(0, step.positions).unsqueeze(1);
        for (std::size_t l = 0; l < m_w.layers.size(); ++l) {
            const Gemma3Layer &L = m_w.layers[l];
            const at::Tensor &cos = L.local ? cosL : cosG, &sin = L.local ? sinL : sinG;
            const at::Tensor qkv = bp::linear(gemmaNorm(x, L.inNorm, eps), L.qkvW);
            const at::Tensor q =
                rotary(gemmaNorm(qkv.narrow(1, 0, H * D).view({T, H, D}), L.qNorm, eps), cos, sin);
            const at::Tensor k =
                rotary(gemmaNorm(qkv.narrow(1, H * D, Hkv * D).view({T, Hkv, D}), L.kNorm, eps), cos, sin);
            const at::Tensor v = qkv.narrow(1, (H + Hkv) * D, Hkv * D).view({T, Hkv, D});
            writeKv(pool.keys(int(l)), pool.values(int(l)), k, v, step.slots);
            const at::Tensor attended =
                pagedAttention(q, pool.keys(int(l)), pool.values(int(l)), step.blockTables, step.querySeq,
                               step.positions, pool.blockTokens(), scale, L.window);
            x = x + gemmaNorm(bp::linear(attended.view({T, H * D}), L.oW), L.postAttnNorm, eps);
            const at::Tensor gateUp = bp::linear(gemmaNorm(x, L.preFfnNorm, eps), L.gateUpW);
            const at::Tensor act = at::gelu(gateUp.narrow(1, 0, f), "tanh") * gateUp.narrow(1, f, f);
            x = x + gemmaNorm(bp::linear(act, L.downW), L.postFfnNorm, eps);
        }
        at::Tensor out = bp::linear(gemmaNorm(x.index_select(0, step.sampleRows), m_w.norm, eps), m_w.embed);
        if (g.finalLogitSoftcap > 0)
            out = at::tanh(out / g.finalLogitSoftcap) * g.finalLogitSoftcap;
        return out;
    }

private:
    const HfModelConfig &m_c;
    const Gemma3Weights &m_w;
};

class Gemma3Decoder final : public PagedModel {
public:
    Gemma3Decoder(const std::string &name, const HfModelConfig &config, Gemma3Weights weights,
                  const TorchPlacement &placement, std::shared_ptr<const TextTokenizer> tokenizer,
                  std::string source)
        : PagedModel(placement, name, m_trunk,
                     KvPoolShape{config.layers, config.kvHeads, config.headDim, placement.dtype},
                     config.maxPositions, config.vocabSize),
          m_config(config), m_weights(std::move(weights)), m_trunk(m_config, m_weights),
          m_tokenizer(std::move(tokenizer)), m_source(std::move(source))
    {
        fillHfModelInfo(m_info, name, config, m_tokenizer, m_source);
    }

private:
    std::vector<std::string> modelNotes() const override { return {hfModelNote(m_info, m_config, m_source)}; }

    HfModelConfig m_config;
    Gemma3Weights m_weights;
    Gemma3Trunk m_trunk;
    std::shared_ptr<const TextTokenizer> m_tokenizer;
    std::string m_source;
};

} // namespace

Result<std::shared_ptr<Backend>> makeGemma3Decoder(const std::string &name, const HfModelConfig &config,
                                                   WeightSource &source, const TorchPlacement &placement,
                                                   std::shared_ptr<const TextTokenizer> tokenizer,
                                                   const std::string &sourceText)
{
    if (placement.device.cuda && config.gemma3->localLayers() > 0)
        return Status(
            StatusCode::InvalidArgument,
            name + ": " + std::to_string(config.gemma3->localLayers()) +
                " layers attend through a sliding window of " + std::to_string(config.gemma3->slidingWindow) +
                " tokens, which only the CPU paged-attention kernel applies; run it with --device cpu");
    const auto options = at::TensorOptions().dtype(placement.dtype).device(placement.atDevice);
    Gemma3Weights weights = loadGemma3(config, source, options);
    return std::shared_ptr<Backend>(std::make_shared<Gemma3Decoder>(
        name, config, std::move(weights), placement, std::move(tokenizer), sourceText));
}

} // namespace bp
