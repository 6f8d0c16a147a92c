// What a Gemma 3 text model's config.json (Gemma3ForCausalLM) adds to the
// Llama family's shape (hf_config.h), and its parser. Torch-free.
//
// Read as transformers 5.25's Gemma3TextConfig reads it, in both formats:
// transformers 5's layer_types and rope_parameters per layer type
// ({"full_attention": {...}, "sliding_attention": {...}}), and the Hub's
// older sliding_window_pattern (every Nth layer global), rope_theta,
// rope_local_base_freq and rope_scaling (the global layers'). Defaults are
// Gemma3TextConfig's (head_dim 256, query_pre_attn_scalar 256, window 4096,
// pattern 6, rope bases 1e6 / 1e4, tied embeddings).
//
// Refused by name: Gemma3ForConditionalGeneration (the vision tower and its
// projector; its text model's config is not a Gemma3ForCausalLM folder),
// attn_logit_softcapping (Gemma 2's), use_bidirectional_attention
// (EmbeddingGemma), attention_bias, an activation other than
// gelu_pytorch_tanh, rope types other than default and linear.
#pragma once

#include "engine/core/result.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace bp {

struct HfModelConfig;

struct Gemma3Shape {
    double queryPreAttnScalar = 256; // attention scale = query_pre_attn_scalar^-1/2
    double finalLogitSoftcap = 0;    // logits = cap * tanh(logits / cap); 0 = none
    // Rotary bases and linear scaling factors (inverse frequencies / factor)
    // of the global (full_attention) and local (sliding_attention) layers.
    double globalRopeTheta = 1e6, globalRopeFactor = 1;
    double localRopeTheta = 1e4, localRopeFactor = 1;
    int slidingWindow = 0; // the config's sliding_window (0 when null)
    // Per layer: the keys a query at position p sees, p - window + 1 .. p;
    // 0 = a global layer (all of 0 .. p). A local layer whose window covers
    // every position is 0 too.
    std::vector<int> layerWindows;
    // Per layer: sliding_attention (the local rotary table), whatever its window.
    std::vector<bool> localTypes;

    int localLayers() const;
};

// `where` names the file in errors (InvalidArgument).
Result<HfModelConfig> parseGemma3Config(const nlohmann::json &config, const std::string &where);

} // namespace bp
