#include "llama_model.h"
#include "cpu_blas.h"
#include "cpu_kernels.h"

#include "cuda_support.h"
#include "gemma3_model.h"
#include "hf_weights.h"
#include "kernels/head_dims.h"
#include "kernels/paged_attention.h"
#include "moe_layer.h"
#include "paged_model.h"

#include "engine/model/bpe_tokenizer.h"
#include "engine/model/hf_config.h"
#include "engine/model/safetensors.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

namespace bp {

namespace {

namespace fs = std::filesystem;

constexpr const char *kHf = "hf:";
constexpr const char *kHfConfig = "hf-config:";

struct LayerWeights {
    at::Tensor inNorm, qkvW, qkvB, oW, oB, postNorm, gateUpW, downW;
    at::Tensor qNorm, kNorm; // Qwen 3: per-head RMSNorm weights [headDim]
    MoeWeights moe;          // Qwen 3 MoE: set on a sparse layer (then gateUpW / downW are not)
};

struct LlamaWeights {
    at::Tensor embed, norm, lmHead;
    std::vector<LayerWeights> layers;
    at::Tensor cos, sin; // rotary tables [positions, headDim]
};

at::ScalarType scalarTypeOf(const std::string &dtype, const std::string &name)
{
    if (dtype == "F32")
        return at::kFloat;
    if (dtype == "BF16")
        return at::kBFloat16;
    if (dtype == "F16")
        return at::kHalf;
    if (dtype == "F64")
        return at::kDouble;
    throw std::runtime_error("tensor " + name + " is stored as " + dtype + ", not a float type");
}

class CheckpointSource final : public WeightSource {
public:
    CheckpointSource(std::shared_ptr<SafetensorsCheckpoint> checkpoint, at::TensorOptions options)
        : m_checkpoint(std::move(checkpoint)), m_options(options)
    {
    }
    at::Tensor get(const std::string &name, std::vector<std::int64_t> shape) override
    {
        auto found = m_checkpoint->find(name);
        if (!found)
            throw std::runtime_error(found.status().message());
        const SafetensorsTensor &t = **found;
        if (t.shape != shape) {
            std::string want, got;
            for (auto d : shape)
                want += (want.empty() ? "" : "x") + std::to_string(d);
            for (auto d : t.shape)
                got += (got.empty() ? "" : "x") + std::to_string(d);
            throw std::runtime_error("tensor " + name + " is " + got + "; config.json says " + want);
        }
        // The mapping read in place, copied once into the dtype and device.
        const at::Tensor mapped = at::from_blob(const_cast<void *>(t.data), t.shape,
                                                at::TensorOptions().dtype(scalarTypeOf(t.dtype, name)));
        return mapped.to(m_options, /*non_blocking=*/false, /*copy=*/true);
    }

private:
    std::shared_ptr<SafetensorsCheckpoint> m_checkpoint;
    at::TensorOptions m_options;
};

class RandomSource final : public WeightSource {
public:
    // `normWeight`: what a norm's weight starts as (Gemma's norms scale by
    // 1 + weight, and transformers starts them at 0).
    RandomSource(at::TensorOptions options, double stddev, at::Generator generator, double normWeight = 1)
        : m_options(options), m_std(stddev), m_generator(std::move(generator)), m_norm(normWeight)
    {
    }
    at::Tensor get(const std::string &name, std::vector<std::int64_t> shape) override
    {
        // As transformers initialises them: norms 1, biases 0, the rest normal(0, initializer_range).
        if (name.size() >= 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0)
            return at::full(shape, m_norm, m_options);
        if (name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0)
            return at::zeros(shape, m_options);
        return at::empty(shape, m_options).normal_(0, m_std, m_generator);
    }

private:
    at::TensorOptions m_options;
    double m_std;
    at::Generator m_generator;
    double m_norm;
};

// transformers' inverse frequencies (default and llama3), in float32.
at::Tensor inverseFrequencies(const HfModelConfig &c)
{
    const std::int64_t D = c.headDim;
    at::Tensor inv =
        1.0 / at::pow(c.ropeTheta,
                      at::arange(0, D, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / double(D));
    if (!c.llama3Rope)
        return inv;
    const double oldContext = c.originalMaxPositions;
    const double lowWavelen = oldContext / c.lowFreqFactor, highWavelen = oldContext / c.highFreqFactor;
    const at::Tensor wavelen = 2 * M_PI / inv;
    at::Tensor llama = at::where(wavelen > lowWavelen, inv / c.ropeFactor, inv);
    const at::Tensor smooth = (oldContext / wavelen - c.lowFreqFactor) / (c.highFreqFactor - c.lowFreqFactor);
    const at::Tensor smoothed = (1 - smooth) * llama / c.ropeFactor + smooth * llama;
    const at::Tensor medium =
        (wavelen < highWavelen).logical_not().logical_and((wavelen > lowWavelen).logical_not());
    return at::where(medium, smoothed, llama);
}

LlamaWeights loadWeights(const HfModelConfig &c, WeightSource &src, const at::TensorOptions &options)
{
    const std::int64_t d = c.hiddenSize, f = c.intermediateSize, D = c.headDim, q = std::int64_t(c.heads) * D,
                       kv = std::int64_t(c.kvHeads) * D, V = c.vocabSize;
    LlamaWeights w;
    w.embed = src.get("model.embed_tokens.weight", {V, d});
    for (int l = 0; l < c.layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".";
        LayerWeights L;
        L.inNorm = src.get(p + "input_layernorm.weight", {d});
        L.qkvW = at::cat({src.get(p + "self_attn.q_proj.weight", {q, d}),
                          src.get(p + "self_attn.k_proj.weight", {kv, d}),
                          src.get(p + "self_attn.v_proj.weight", {kv, d})},
                         0);
        if (c.qkvBias)
            L.qkvB = at::cat({src.get(p + "self_attn.q_proj.bias", {q}),
                              src.get(p + "self_attn.k_proj.bias", {kv}),
                              src.get(p + "self_attn.v_proj.bias", {kv})},
                             0);
        L.oW = src.get(p + "self_attn.o_proj.weight", {d, q});
        if (c.oBias)
            L.oB = src.get(p + "self_attn.o_proj.bias", {d});
        if (c.qkNorm) {
            L.qNorm = src.get(p + "self_attn.q_norm.weight", {D});
            L.kNorm = src.get(p + "self_attn.k_norm.weight", {D});
        }
        L.postNorm = src.get(p + "post_attention_layernorm.weight", {d});
        if (c.moeLayer(l)) {
            // transformers' checkpoint layout: mlp.gate (the router) and
            // mlp.experts.E.{gate,up,down}_proj, stacked here per layer
            const std::int64_t m = c.moeIntermediateSize;
            L.moe.router = src.get(p + "mlp.gate.weight", {c.experts, d});
            std::vector<at::Tensor> gateUp, down;
            for (int e = 0; e < c.experts; ++e) {
                const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
                gateUp.push_back(at::cat(
                    {src.get(x + "gate_proj.weight", {m, d}), src.get(x + "up_proj.weight", {m, d})}, 0));
                down.push_back(src.get(x + "down_proj.weight", {d, m}));
            }
            L.moe.gateUp = at::stack(gateUp, 0);
            gateUp.clear();
            L.moe.down = at::stack(down, 0);
        } else {
            L.gateUpW = at::cat(
                {src.get(p + "mlp.gate_proj.weight", {f, d}), src.get(p + "mlp.up_proj.weight", {f, d})}, 0);
            L.downW = src.get(p + "mlp.down_proj.weight", {d, f});
        }
        w.layers.push_back(std::move(L));
    }
    w.norm = src.get("model.norm.weight", {d});
    w.lmHead = c.tieEmbeddings ? w.embed : src.get("lm_head.weight", {V, d});
    // Rotary tables as transformers computes them: position x frequency in
    // float32, both halves, cos and sin, then the model's dtype.
    const at::Tensor freqs =
        at::outer(at::arange(c.maxPositions, at::TensorOptions().dtype(at::kFloat)), inverseFrequencies(c));
    const at::Tensor emb = at::cat({freqs, freqs}, -1);
    w.cos = emb.cos().to(options);
    w.sin = emb.sin().to(options);
    return w;
}

// RMSNorm as transformers' LlamaRMSNorm: in float32, then the weight in the dtype.
at::Tensor rmsNorm(const at::Tensor &x, const at::Tensor &weight, double eps)
{
    const at::Tensor xf = x.to(at::kFloat);
    const at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps);
    return weight * normed.to(x.scalar_type());
}

// x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x2, x1); cos/sin [T, 1, D].
at::Tensor rotary(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin)
{
    const std::int64_t half = x.size(-1) / 2;
    const at::Tensor rotated = at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
}

class LlamaPagedTrunk final : public PagedTrunk {
public:
    LlamaPagedTrunk(const HfModelConfig &config, const LlamaWeights &weights)
        : m_c(config), m_w(weights), m_routing{config.expertsPerToken, config.normTopkProb}
    {
    }

    // The distinct experts the MoE layers' steps have routed to, summed over
    // layers and steps.
    std::int64_t expertsTouched() const { return m_touched.load(std::memory_order_relaxed); }

    at::Tensor logits(const StepTensors &step, KvPool &pool) const override
    {
        if (cpuFused(m_w.embed))
            return logitsCpu(step, pool);
        const std::int64_t T = step.tokens, D = m_c.headDim, H = m_c.heads, Hkv = m_c.kvHeads,
                           f = m_c.intermediateSize;
        const double scale = 1.0 / std::sqrt(double(D));
        at::Tensor x = at::embedding(m_w.embed, step.ids);
        const at::Tensor cos = m_w.cos.index_select(0, step.positions).unsqueeze(1);
        const at::Tensor sin = m_w.sin.index_select(0, step.positions).unsqueeze(1);
        for (std::size_t l = 0; l < m_w.layers.size(); ++l) {
            const LayerWeights &L = m_w.layers[l];
            const at::Tensor h = rmsNorm(x, L.inNorm, m_c.rmsEps);
            const at::Tensor qkv = bp::linear(h, L.qkvW, L.qkvB);
            at::Tensor q = qkv.narrow(1, 0, H * D).view({T, H, D});
            at::Tensor k = qkv.narrow(1, H * D, Hkv * D).view({T, Hkv, D});
            if (m_c.qkNorm) { // Qwen 3: each head normed before RoPE
                q = rmsNorm(q, L.qNorm, m_c.rmsEps);
                k = rmsNorm(k, L.kNorm, m_c.rmsEps);
            }
            q = rotary(q, cos, sin);
            k = rotary(k, cos, sin);
            const at::Tensor v = qkv.narrow(1, (H + Hkv) * D, Hkv * D).view({T, Hkv, D});
            writeKv(pool.keys(int(l)), pool.values(int(l)), k, v, step.slots);
            const at::Tensor attended =
                pagedAttention(q, pool.keys(int(l)), pool.values(int(l)), step.blockTables, step.querySeq,
                               step.positions, pool.blockTokens(), scale);
            x = x + bp::linear(attended.view({T, H * D}), L.oW, L.oB);
            if (L.moe.router.defined()) {
                x = x + moeBlock(rmsNorm(x, L.postNorm, m_c.rmsEps), L.moe, m_routing, &m_touched);
                continue;
            }
            const at::Tensor gateUp = bp::linear(rmsNorm(x, L.postNorm, m_c.rmsEps), L.gateUpW);
            x = x + bp::linear(at::silu(gateUp.narrow(1, 0, f)) * gateUp.narrow(1, f, f), L.downW);
        }
        return bp::linear(rmsNorm(x.index_select(0, step.sampleRows), m_w.norm, m_c.rmsEps), m_w.lmHead);
    }

private:
    // The CPU step (float32, bfloat16): the same arithmetic in fewer passes
    // (cpu_kernels.h): one RMSNorm kernel, RoPE applied in place on the QKV
    // product, SwiGLU in one pass, the residual products accumulated into x
    // itself; products of few rows stream the weights once.
    at::Tensor logitsCpu(const StepTensors &step, KvPool &pool) const
    {
        const std::int64_t T = step.tokens, D = m_c.headDim, H = m_c.heads, Hkv = m_c.kvHeads;
        const double scale = 1.0 / std::sqrt(double(D));
        at::Tensor x = at::embedding(m_w.embed, step.ids);
        for (std::size_t l = 0; l < m_w.layers.size(); ++l) {
            const LayerWeights &L = m_w.layers[l];
            at::Tensor qkv = bp::linear(rmsNormCpu(x, L.inNorm, m_c.rmsEps), L.qkvW, L.qkvB);
            if (m_c.qkNorm) { // Qwen 3: each head of q and k normed before RoPE
                at::Tensor q = qkv.narrow(1, 0, H * D), k = qkv.narrow(1, H * D, Hkv * D);
                q.copy_(rmsNormCpu(q.reshape({T * H, D}), L.qNorm, m_c.rmsEps).view({T, H * D}));
                k.copy_(rmsNormCpu(k.reshape({T * Hkv, D}), L.kNorm, m_c.rmsEps).view({T, Hkv * D}));
            }
            ropeInPlaceCpu(qkv, H + Hkv, D, m_w.cos, m_w.sin, step.positions);
            const at::Tensor q = qkv.narrow(1, 0, H * D).view({T, H, D});
            const at::Tensor k = qkv.narrow(1, H * D, Hkv * D).view({T, Hkv, D});
            const at::Tensor v = qkv.narrow(1, (H + Hkv) * D, Hkv * D).view({T, Hkv, D});
            writeKv(pool.keys(int(l)), pool.values(int(l)), k, v, step.slots);
            const at::Tensor attended =
                pagedAttention(q, pool.keys(int(l)), pool.values(int(l)), step.blockTables, step.querySeq,
                               step.positions, pool.blockTokens(), scale);
            addLinear(x, attended.view({T, H * D}), L.oW, L.oB);
            if (L.moe.router.defined()) {
                x.add_(moeBlock(rmsNormCpu(x, L.postNorm, m_c.rmsEps), L.moe, m_routing, &m_touched));
                continue;
            }
            const at::Tensor gateUp = bp::linear(rmsNormCpu(x, L.postNorm, m_c.rmsEps), L.gateUpW);
            addLinear(x, swigluCpu(gateUp), L.downW);
        }
        return bp::linear(rmsNormCpu(x.index_select(0, step.sampleRows), m_w.norm, m_c.rmsEps), m_w.lmHead);
    }

    const HfModelConfig &m_c;
    const LlamaWeights &m_w;
    MoeRouting m_routing;
    mutable std::atomic<std::int64_t> m_touched{0};
};

// A mixture-of-experts step's shapes depend on its routing (rows per
// expert), which a CUDA graph cannot replay: those steps run eagerly.
TorchPlacement withoutGraphsForExperts(TorchPlacement placement, const HfModelConfig &config)
{
    if (config.experts > 0)
        placement.cudaGraphs = false;
    return placement;
}

std::string gib(double bytes)
{
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / double(1ull << 30));
    return buf;
}

class HfDecoder final : public PagedModel {
public:
    HfDecoder(const std::string &name, const HfModelConfig &config, LlamaWeights weights,
              const TorchPlacement &placement, std::shared_ptr<const TextTokenizer> tokenizer,
              std::string source)
        : PagedModel(withoutGraphsForExperts(placement, config), name, m_trunk,
                     KvPoolShape{config.layers, config.kvHeads, config.headDim, placement.dtype},
                     config.maxPositions, config.vocabSize),
          m_config(config), m_weights(std::move(weights)), m_trunk(m_config, m_weights),
          m_tokenizer(std::move(tokenizer)), m_source(std::move(source))
    {
        fillHfModelInfo(m_info, name, config, m_tokenizer, m_source);
        m_info.experts = config.experts;
        m_info.expertsPerToken = config.expertsPerToken;
        m_info.moeLayers = config.moeLayers();
    }

    std::int64_t expertsTouched() const override
    {
        return m_config.experts > 0 ? m_trunk.expertsTouched() : -1;
    }

private:
    std::vector<std::string> modelNotes() const override { return {hfModelNote(m_info, m_config, m_source)}; }

    HfModelConfig m_config;
    LlamaWeights m_weights;
    LlamaPagedTrunk m_trunk;
    std::shared_ptr<const TextTokenizer> m_tokenizer;
    std::string m_source;
};

} // namespace

bool isHfModelName(const std::string &name)
{
    return name.rfind(kHf, 0) == 0 || name.rfind(kHfConfig, 0) == 0;
}

Result<std::shared_ptr<Backend>> makeHfDecoder(const ModelSpec &spec)
{
    const bool random = spec.name.rfind(kHfConfig, 0) == 0;
    const std::string path =
        spec.name.substr(random ? std::string(kHfConfig).size() : std::string(kHf).size());
    std::error_code ec;
    if (path.empty())
        return Status(StatusCode::InvalidArgument, "model '" + spec.name + "' names no path");
    const fs::path folder = random ? fs::path(path).parent_path() : fs::path(path);
    if (!random && !fs::is_directory(folder, ec))
        return Status(StatusCode::NotFound, spec.name + ": " + path +
                                                " is not a folder (hf:FOLDER wants a "
                                                "Hugging Face model folder)");
    auto config = loadHfConfig(random ? path : (folder / "config.json").string());
    if (!config)
        return config.status();
    std::shared_ptr<const TextTokenizer> tokenizer;
    const fs::path tokenizerFile = folder / "tokenizer.json";
    if (fs::exists(tokenizerFile, ec)) {
        auto t = BpeTokenizer::load(tokenizerFile.string());
        if (!t)
            return t.status();
        if ((*t)->vocabSize() > config->vocabSize)
            return Status(StatusCode::InvalidArgument,
                          tokenizerFile.string() + " has " + std::to_string((*t)->vocabSize()) +
                              " ids, the model " + std::to_string(config->vocabSize));
        tokenizer = *t;
    } else if (!random) {
        return Status(StatusCode::NotFound, spec.name + ": no tokenizer.json in " + folder.string());
    }
    std::shared_ptr<SafetensorsCheckpoint> checkpoint;
    if (!random) {
        auto c = SafetensorsCheckpoint::openFolder(folder.string());
        if (!c)
            return c.status();
        checkpoint = *c;
    }
    auto placement = prepareTorch(spec);
    if (!placement)
        return placement.status();
    // A head size the device's attention kernel lacks is refused here, not
    // at the first step (after minutes of loading weights).
    if (const std::string problem = kernels::headDimProblem(config->headDim, placement->device.cuda);
        !problem.empty())
        return Status(StatusCode::InvalidArgument, spec.name + ": " + problem);
    // Weights that cannot fit are refused before anything is allocated.
    const double need = double(config->parameterCount()) * double(c10::elementSize(placement->dtype));
    const double free = double(availableDeviceMemory(placement->atDevice));
    if (need > free)
        return Status(StatusCode::ResourceExhausted,
                      spec.name + ": " + std::to_string(config->parameterCount()) + " parameters in " +
                          placement->dtypeName + " need " + gib(need) + " on " + placement->device.name +
                          ", " + gib(free) + " is free (before the KV cache)");
    const std::string name = spec.name;
    const std::string source = random ? "seeded random weights (seed " + std::to_string(spec.seed) + ")"
                                      : "weights from " + folder.string();
    try {
        c10::InferenceMode guard;
        useTorchThreads(placement->threads);
        const auto options = at::TensorOptions().dtype(placement->dtype).device(placement->atDevice);
        LlamaWeights weights;
        if (random) {
            RandomSource src(options, config->initializerRange,
                             deviceGenerator(placement->atDevice, spec.seed), config->gemma3 ? 0.0 : 1.0);
            if (config->gemma3)
                return makeGemma3Decoder(name, *config, src, *placement, tokenizer, source);
            weights = loadWeights(*config, src, options);
        } else {
            CheckpointSource src(checkpoint, options);
            if (config->gemma3)
                return makeGemma3Decoder(name, *config, src, *placement, tokenizer, source);
            weights = loadWeights(*config, src, options);
        }
        return std::shared_ptr<Backend>(
            std::make_shared<HfDecoder>(name, *config, std::move(weights), *placement, tokenizer, source));
    } catch (const std::exception &e) {
        return torchFailure("cannot load " + spec.name, e);
    }
}

} // namespace bp
