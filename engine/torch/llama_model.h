// Hugging Face decoders of the Llama family on the paged step
// (docs/models.md, "Hugging Face models"):
//
//   hf:FOLDER          config.json, *.safetensors (one file, or shards named by
//                      model.safetensors.index.json) and tokenizer.json: the
//                      model's own weights, memory-mapped and copied once into
//                      the dtype and device asked for; its tokenizer
//   hf-config:FILE     a config.json alone: the same model with seeded random
//                      weights drawn on the device (normal(0,
//                      initializer_range), norms 1, biases 0), for shapes
//                      nobody can download here; a tokenizer.json beside the
//                      file is used when there is one, else the byte tokenizer
//
// LlamaForCausalLM, Qwen2ForCausalLM, MistralForCausalLM, Qwen3ForCausalLM
// and Qwen3MoeForCausalLM: grouped-query attention, rotary embeddings
// (rope_theta, and Llama 3's llama3 scaling), RMSNorm, SwiGLU, tied or
// untied embeddings, Qwen 2's QKV bias, Qwen 3's per-head q/k RMSNorm, Qwen
// 3 MoE's sparse MLP blocks (moe_layer.h; their steps never run as CUDA
// graphs, the rows per expert change with the routing), and Gemma3ForCausalLM,
// built by gemma3_model.h from the same sources. The
// arithmetic mirrors transformers' (RMSNorm in float32, rotary tables
// computed in float32 and cast), so float32 logits match its to ~1e-6.
//
// A model whose weights do not fit the device gets ResourceExhausted saying
// how much it needs and how much is free, before anything is allocated.
//
// Torch-free header; llama_model.cpp includes ATen.
#pragma once

#include "engine/model/model_registry.h"

namespace bp {

// True for names this file builds ("hf:", "hf-config:").
bool isHfModelName(const std::string &name);
Result<std::shared_ptr<Backend>> makeHfDecoder(const ModelSpec &spec);

} // namespace bp
