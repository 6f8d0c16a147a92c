// A Hugging Face config.json of the Llama family (LlamaForCausalLM,
// Qwen2ForCausalLM, MistralForCausalLM, Qwen3ForCausalLM and
// Qwen3MoeForCausalLM): the shape BatchPilot's paged decoder
// builds (engine/torch/llama_model.h). Torch-free, so the registry, the docs
// table and the tests read it without torch.
//
// Both config formats are read: transformers 4's rope_theta / rope_scaling
// and transformers 5's rope_parameters. Anything the decoder does not
// implement is refused by name: another architecture, a rope type other
// than default and llama3, a sliding window shorter than the positions.
// Gemma3ForCausalLM is read by gemma3_config.h (its sliding windows run).
#pragma once

#include "engine/core/result.h"
#include "engine/model/backend.h"
#include "engine/model/gemma3_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bp {

struct HfModelConfig {
    std::string architecture; // LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM, Qwen3*
    int vocabSize = 0;
    int hiddenSize = 0;
    int intermediateSize = 0;
    int layers = 0;
    int heads = 0;
    int kvHeads = 0;
    int headDim = 0;
    int maxPositions = 0;
    double rmsEps = 1e-6;
    double ropeTheta = 10000;
    // rope_type llama3 (Llama 3.1+): the long-context frequency adjustment.
    bool llama3Rope = false;
    double ropeFactor = 1, lowFreqFactor = 1, highFreqFactor = 4;
    int originalMaxPositions = 8192;
    bool tieEmbeddings = false;
    bool qkvBias = false; // Qwen 2 always; Llama with attention_bias
    bool oBias = false;   // Llama with attention_bias
    bool qkNorm = false;  // Qwen 3: RMSNorm over each head of q and k before RoPE
    // Qwen 3 MoE (experts > 0): a layer l is a sparse MoE block unless it is
    // in mlp_only_layers or (l + 1) % decoder_sparse_step != 0 (then a dense
    // MLP of intermediateSize); each token goes to its expertsPerToken
    // experts of moeIntermediateSize, weighted by the router's softmax over
    // the chosen ones (renormalised when normTopkProb).
    int experts = 0;
    int expertsPerToken = 0;
    int moeIntermediateSize = 0;
    bool normTopkProb = false;
    int decoderSparseStep = 1;
    std::vector<int> mlpOnlyLayers;
    bool moeLayer(int layer) const;
    int moeLayers() const;
    double initializerRange = 0.02;
    std::string torchDtype; // what the checkpoint was saved in ("bfloat16"), informational
    std::vector<int> eosTokenIds;
    // Gemma3ForCausalLM's own parts (gemma3_config.h); absent for the Llama family.
    std::optional<Gemma3Shape> gemma3;

    std::int64_t parameterCount() const;
    // What one token's forward pass uses: parameterCount() less the experts
    // it is not routed to (Qwen3-30B-A3B: about 3.3 B of 30.5 B).
    std::int64_t activeParameterCount() const;
    // Bytes one token's keys and values take over all layers at `elementSize`.
    std::int64_t kvBytesPerToken(int elementSize) const
    {
        return std::int64_t(layers) * 2 * kvHeads * headDim * elementSize;
    }
    // "Qwen2ForCausalLM: 24 layers, hidden 896, 14 heads / 2 KV heads of 64, ..."
    std::string describe() const;
    // What every family refuses in the sizes it read ("" when they hold):
    // non-positive sizes, query heads not a multiple of the KV heads, an odd
    // head_dim (rotary embeddings rotate pairs).
    std::string shapeProblem() const;
};

// InvalidArgument naming `where` and the field.
Result<HfModelConfig> parseHfConfig(const nlohmann::json &config, const std::string &where);
Result<HfModelConfig> loadHfConfig(const std::string &path);

// The ModelInfo fields a decoder built from `config` reports whatever its
// family: name, vocabulary, positions (one kept for the first generated
// token), generative, parameters, architecture, its tokenizer (none: the
// byte tokenizer) and the description, which names `source` (where the
// weights came from) and info.dtype (set before this).
void fillHfModelInfo(ModelInfo &info, const std::string &name, const HfModelConfig &config,
                     std::shared_ptr<const TextTokenizer> tokenizer, const std::string &source);
// The model line of a replay's or a report's notes: name, architecture,
// parameters, dtype, source.
std::string hfModelNote(const ModelInfo &info, const HfModelConfig &config, const std::string &source);

} // namespace bp
