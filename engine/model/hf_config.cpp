#include "hf_config.h"

#include <fstream>

namespace bp {

namespace {

Status bad(const std::string &where, const std::string &what)
{
    return Status(StatusCode::InvalidArgument, where + ": " + what);
}

} // namespace

bool HfModelConfig::moeLayer(int layer) const
{
    for (int l : mlpOnlyLayers)
        if (l == layer)
            return false;
    return experts > 0 && decoderSparseStep > 0 && (layer + 1) % decoderSparseStep == 0;
}

int HfModelConfig::moeLayers() const
{
    int n = 0;
    for (int l = 0; l < layers; ++l)
        n += moeLayer(l);
    return n;
}

namespace {

std::int64_t countParameters(const HfModelConfig &c, int routedExperts)
{
    const std::int64_t d = c.hiddenSize, q = std::int64_t(c.heads) * c.headDim,
                       kv = std::int64_t(c.kvHeads) * c.headDim;
    const std::int64_t attention = d * q + 2 * d * kv + q * d + (c.qkvBias ? q + 2 * kv : 0) +
                                   (c.oBias ? d : 0) + (c.qkNorm ? 2 * std::int64_t(c.headDim) : 0);
    const std::int64_t mlp = 3 * d * std::int64_t(c.intermediateSize);
    // the router's [experts, d] and each expert's SwiGLU
    const std::int64_t moe =
        std::int64_t(c.experts) * d + routedExperts * 3 * d * std::int64_t(c.moeIntermediateSize);
    // Gemma 3: two more RMSNorms per layer and its per-head q/k norms
    const std::int64_t gemmaNorms = c.gemma3 ? 2 * d + 2 * std::int64_t(c.headDim) : 0;
    std::int64_t total = std::int64_t(c.vocabSize) * d * (c.tieEmbeddings ? 1 : 2) + d; // + the final norm
    for (int l = 0; l < c.layers; ++l)
        total += attention + (c.moeLayer(l) ? moe : mlp) + 2 * d + gemmaNorms; // + two RMSNorms
    return total;
}

} // namespace

std::int64_t HfModelConfig::parameterCount() const
{
    return countParameters(*this, experts);
}

std::int64_t HfModelConfig::activeParameterCount() const
{
    return countParameters(*this, expertsPerToken);
}

std::string HfModelConfig::describe() const
{
    return architecture + ": " + std::to_string(layers) + " layers, hidden " + std::to_string(hiddenSize) +
           ", " + std::to_string(heads) + " heads / " + std::to_string(kvHeads) + " KV heads of " +
           std::to_string(headDim) + ", MLP " + std::to_string(intermediateSize) + ", vocab " +
           std::to_string(vocabSize) + ", " + std::to_string(maxPositions) + " positions" +
           (tieEmbeddings ? ", tied embeddings" : "") + (qkNorm ? ", q/k norms" : "") +
           (experts > 0 ? ", " + std::to_string(moeLayers()) + " MoE layers of " + std::to_string(experts) +
                              " experts (top " + std::to_string(expertsPerToken) + ", MLP " +
                              std::to_string(moeIntermediateSize) + ")"
                        : "") +
           (gemma3 && gemma3->localLayers() > 0
                ? ", sliding window " + std::to_string(gemma3->slidingWindow) + " on " +
                      std::to_string(gemma3->localLayers()) + " of " + std::to_string(layers) + " layers"
                : "");
}

std::string HfModelConfig::shapeProblem() const
{
    if (vocabSize < 1 || hiddenSize < 1 || intermediateSize < 1 || layers < 1 || heads < 1 || kvHeads < 1 ||
        headDim < 1 || maxPositions < 2)
        return "sizes must be positive (vocab, hidden, intermediate, layers, heads, positions)";
    if (heads % kvHeads != 0)
        return "num_attention_heads must be a multiple of num_key_value_heads";
    if (headDim % 2 != 0)
        return "head_dim must be even (rotary embeddings rotate pairs)";
    return {};
}

void fillHfModelInfo(ModelInfo &info, const std::string &name, const HfModelConfig &config,
                     std::shared_ptr<const TextTokenizer> tokenizer, const std::string &source)
{
    info.name = name;
    info.vocabSize = config.vocabSize;
    info.maxSequenceLength = config.maxPositions - 1;
    info.generative = true;
    info.maxNewTokensLimit = config.maxPositions - 1;
    info.parameters = config.parameterCount();
    info.architecture = config.architecture;
    info.description = config.describe() + ", " + info.dtype + "; " + source +
                       (tokenizer ? "; tokenizer: " + tokenizer->describe() : "; byte tokenizer");
    info.tokenizer = std::move(tokenizer);
}

std::string hfModelNote(const ModelInfo &info, const HfModelConfig &config, const std::string &source)
{
    return "model: " + info.name + " (" + config.architecture + ", " + std::to_string(info.parameters) +
           " parameters, " + info.dtype + ", " + source + ")";
}

Result<HfModelConfig> parseHfConfig(const nlohmann::json &j, const std::string &where)
{
    if (!j.is_object())
        return bad(where, "not a JSON object");
    HfModelConfig c;
    try {
        const auto archs = j.value("architectures", std::vector<std::string>{});
        if (archs.empty())
            return bad(where, "no \"architectures\"");
        c.architecture = archs.front();
        if (c.architecture.rfind("Gemma3For", 0) ==
            0) // Gemma3ForCausalLM, or refused naming the vision tower
            return parseGemma3Config(j, where);
        if (c.architecture != "LlamaForCausalLM" && c.architecture != "Qwen2ForCausalLM" &&
            c.architecture != "MistralForCausalLM" && c.architecture != "Qwen3ForCausalLM" &&
            c.architecture != "Qwen3MoeForCausalLM")
            return bad(where,
                       "architecture " + c.architecture +
                           " is not one BatchPilot runs (LlamaForCausalLM, Qwen2ForCausalLM, "
                           "MistralForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, Gemma3ForCausalLM)");
        c.vocabSize = j.at("vocab_size").get<int>();
        c.hiddenSize = j.at("hidden_size").get<int>();
        c.intermediateSize = j.at("intermediate_size").get<int>();
        c.layers = j.at("num_hidden_layers").get<int>();
        c.heads = j.at("num_attention_heads").get<int>();
        c.kvHeads = j.value("num_key_value_heads", c.heads);
        c.headDim = j.contains("head_dim") && !j["head_dim"].is_null()
                        ? j["head_dim"].get<int>()
                        : (c.heads > 0 ? c.hiddenSize / c.heads : 0);
        c.maxPositions = j.value("max_position_embeddings", 2048);
        c.rmsEps = j.value("rms_norm_eps", 1e-6);
        c.tieEmbeddings = j.value("tie_word_embeddings", false);
        c.initializerRange = j.value("initializer_range", 0.02);
        c.torchDtype = j.value("torch_dtype", j.value("dtype", std::string()));
        const bool qwen2 = c.architecture == "Qwen2ForCausalLM";
        const bool qwen3 = c.architecture == "Qwen3ForCausalLM" || c.architecture == "Qwen3MoeForCausalLM";
        const bool attentionBias = j.value("attention_bias", false);
        c.qkvBias = qwen2 || attentionBias;
        c.oBias = !qwen2 && attentionBias;
        c.qkNorm = qwen3;
        if (c.architecture == "Qwen3MoeForCausalLM") {
            // config.json says num_experts (as Qwen ships it; transformers 5 writes num_local_experts)
            c.experts =
                j.contains("num_experts") ? j["num_experts"].get<int>() : j.value("num_local_experts", 0);
            c.expertsPerToken = j.at("num_experts_per_tok").get<int>();
            c.moeIntermediateSize = j.at("moe_intermediate_size").get<int>();
            c.normTopkProb = j.value("norm_topk_prob", false);
            c.decoderSparseStep = j.value("decoder_sparse_step", 1);
            const auto only = j.value("mlp_only_layers", nlohmann::json());
            if (only.is_array())
                c.mlpOnlyLayers = only.get<std::vector<int>>();
            if (c.experts < 1 || c.expertsPerToken < 1 || c.expertsPerToken > c.experts ||
                c.moeIntermediateSize < 1 || c.decoderSparseStep < 1)
                return bad(where, "num_experts, num_experts_per_tok (1..num_experts), moe_intermediate_size "
                                  "and decoder_sparse_step must be positive");
        }
        if (j.value("mlp_bias", false))
            return bad(where, "mlp_bias is not supported");
        if (j.value("hidden_act", std::string("silu")) != "silu")
            return bad(where,
                       "hidden_act " + j.value("hidden_act", std::string()) + " is not supported (silu is)");
        // rope: transformers 5 keeps it in rope_parameters, 4 in rope_theta / rope_scaling
        nlohmann::json rope = j.value("rope_parameters", nlohmann::json());
        if (rope.is_null()) {
            rope = j.value("rope_scaling", nlohmann::json());
            if (rope.is_null())
                rope = nlohmann::json::object();
            rope["rope_theta"] = j.value("rope_theta", 10000.0);
        }
        c.ropeTheta = rope.value("rope_theta", j.value("rope_theta", 10000.0));
        const std::string type = rope.value("rope_type", rope.value("type", std::string("default")));
        if (type == "llama3") {
            c.llama3Rope = true;
            c.ropeFactor = rope.at("factor").get<double>();
            c.lowFreqFactor = rope.value("low_freq_factor", 1.0);
            c.highFreqFactor = rope.value("high_freq_factor", 4.0);
            c.originalMaxPositions = rope.value("original_max_position_embeddings", 8192);
        } else if (type != "default") {
            return bad(where, "rope type " + type + " is not supported (default and llama3 are)");
        }
        const auto window = j.value("sliding_window", nlohmann::json());
        const bool windowUsed = qwen2 || qwen3 ? j.value("use_sliding_window", false) : !window.is_null();
        if (windowUsed && window.is_number() && window.get<int>() < c.maxPositions)
            return bad(where, "a sliding window of " + std::to_string(window.get<int>()) +
                                  " tokens shorter than the positions is not supported");
        const auto eos = j.value("eos_token_id", nlohmann::json());
        if (eos.is_number())
            c.eosTokenIds.push_back(eos.get<int>());
        else if (eos.is_array())
            c.eosTokenIds = eos.get<std::vector<int>>();
    } catch (const nlohmann::json::exception &e) {
        return bad(where, std::string("malformed: ") + e.what());
    }
    if (const std::string problem = c.shapeProblem(); !problem.empty())
        return bad(where, problem);
    return c;
}

Result<HfModelConfig> loadHfConfig(const std::string &path)
{
    std::ifstream in(path);
    if (!in)
        return Status(StatusCode::NotFound, path + ": cannot read it");
    const auto j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded())
        return bad(path, "not JSON");
    return parseHfConfig(j, path);
}

} // namespace bp
