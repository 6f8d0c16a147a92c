// Gemma 3's text model (Gemma3ForCausalLM) on the paged step, built by
// llama_model.cpp's hf: / hf-config: loader once config.json names it
// (engine/model/gemma3_config.h):
//
//   x = embed(ids) * sqrt(hidden)              (the scale in the model's dtype)
//   per layer:
//     h = norm(x); q, k, v = h W_q, h W_k, h W_v
//     q, k = per-head RMSNorm (q_norm, k_norm), then rotary embeddings with the
//            layer's own table (local: rope_local_base_freq; global: rope_theta
//            and its linear scaling)
//     x = x + norm(attention(q, k, v) W_o)     scale query_pre_attn_scalar^-1/2;
//                                              a local layer sees its sliding
//                                              window of keys only
//     x = x + norm(down(gelu_tanh(gate(norm(x))) * up(norm(x))))
//   logits = norm(x) E^T, then cap * tanh(logits / cap) when the config has a
//   final_logit_softcapping
// where every norm is Gemma's RMSNorm, x / rms(x) * (1 + weight) in float32
// and then the dtype, four a layer. The arithmetic mirrors transformers 5.25's
// Gemma3 modelling, so float32 logits match it to ~1e-6.
//
// The window is the CPU paged-attention kernel's (kernels/paged_attention.h);
// on CUDA a model with local layers is refused at load, naming the CPU.
// The KV pool keeps every layer's keys for the whole sequence (a local
// layer's older keys are not freed).
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include "hf_weights.h"
#include "torch_backend.h"

#include "engine/model/backend.h"
#include "engine/model/hf_config.h"

#include <memory>
#include <string>

namespace bp {

// The model, its weights drawn from `source`; throws (naming the tensor) on
// a missing or misshapen one, as the Llama loader does. InvalidArgument
// for local layers on a CUDA device, before any weight is made.
Result<std::shared_ptr<Backend>> makeGemma3Decoder(const std::string &name, const HfModelConfig &config,
                                                   WeightSource &source, const TorchPlacement &placement,
                                                   std::shared_ptr<const TextTokenizer> tokenizer,
                                                   const std::string &sourceText);

} // namespace bp
