// A mixture-of-experts MLP block as Qwen 3 MoE computes it (transformers'
// Qwen3MoeSparseMoeBlock), on the paged step: the router's logits over the
// experts, their softmax in float32, the top k per token (renormalised to
// sum to 1 when norm_topk_prob), cast back to the model's dtype; each
// chosen expert's SwiGLU on the token, scaled by its weight and summed.
//
// The experts run batched: the step's (token, expert) pairs are sorted by
// expert once, the rows gathered with one index_select, each expert that
// got any rows runs one product over all of them, and the weighted results
// are added back with one index_add. No loop over tokens; the loop is over
// the experts a step touches (the number the cost model's active-experts
// term counts, docs/simulation.md). An expert no token chose costs nothing.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include <ATen/ATen.h>

#include <atomic>
#include <cstdint>

namespace bp {

struct MoeWeights {
    at::Tensor router; // [experts, d]
    at::Tensor gateUp; // [experts, 2m, d]: each expert's gate_proj rows, then up_proj's
    at::Tensor down;   // [experts, d, m]
};

struct MoeRouting {
    int topK = 1;
    bool normTopk = false;
};

// The block's output [T, d] for the normed hidden states x [T, d]. Adds the
// number of distinct experts the step's tokens went to to `touched` when given.
at::Tensor moeBlock(const at::Tensor &x, const MoeWeights &w, const MoeRouting &routing,
                    std::atomic<std::int64_t> *touched = nullptr);

} // namespace bp
