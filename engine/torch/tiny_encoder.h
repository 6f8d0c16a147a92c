// builtin:tiny-encoder — a transformer encoder classifier with seeded random
// weights: token + position embeddings, `layers` pre-LN blocks with
// bidirectional attention over the real tokens, a final LayerNorm, a mean
// over the real tokens, and a linear head. Output: `classes` logits per
// sequence (SequenceResult::values). Sizes: model_presets.h. Padding: left,
// masked (transformer_layers.h); max_new_tokens is ignored.
//
// Torch-free header; the model lives in tiny_encoder.cpp.
#pragma once

#include "engine/model/backend.h"
#include "engine/model/model_registry.h"

namespace bp {

// NotFound for an unknown preset; Unavailable / InvalidArgument for the device.
Result<std::shared_ptr<Backend>> makeTinyEncoder(const ModelSpec &spec);

} // namespace bp
