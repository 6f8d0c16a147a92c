// The arithmetic shared by builtin:tiny-encoder and builtin:tiny-decoder: a
// pre-LayerNorm transformer trunk (GPT-2's block) written directly on ATen
// tensors, so the decoder can keep a KV cache and both models control their
// masks. Internal to engine/torch/ (includes ATen).
//
// Padding convention (both models): LEFT padding. A sequence of n real tokens
// in a batch padded to L occupies columns L-n .. L-1; its positions count
// from 0 at its first real token (positions = cumsum(mask) - 1), and no real
// query ever attends to a padded key (the additive mask is -inf there). A
// sequence therefore computes the same numbers alone or inside any batch, up
// to floating-point summation order. Left padding puts every sequence's last
// token in the last column, so a decoder reads next-token logits from one
// column and appends generated tokens to all rows at the same index.
//
// Threading: the weights are read-only after construction; every function
// here keeps its state in locals, so concurrent calls are safe.
#pragma once

#include "model_presets.h"
#include "paged_runner.h"
#include "torch_device.h"

#include <ATen/ATen.h>

#include <vector>

namespace bp {

struct BlockWeights {
    at::Tensor ln1Weight, ln1Bias;
    at::Tensor qkvWeight, qkvBias;   // [3d, d], [3d]
    at::Tensor projWeight, projBias; // [d, d], [d]
    at::Tensor ln2Weight, ln2Bias;
    at::Tensor fc1Weight, fc1Bias;   // [f, d], [f]
    at::Tensor fc2Weight, fc2Bias;   // [d, f], [d]
};

struct TrunkWeights {
    at::Tensor tokenEmbedding;    // [vocab, d]; also the decoder's (tied) output projection
    at::Tensor positionEmbedding; // [maxPositions, d]
    std::vector<BlockWeights> blocks;
    at::Tensor lnFWeight, lnFBias;
};

// GPT-2's initialisation from `generator` (normal(0, 0.02); residual output
// projections scaled by 1/sqrt(2·layers); LayerNorms 1/0; biases 0), drawn on
// the CPU in float32 in a fixed order and then moved and cast, so a seed
// gives the same weights on every device (up to the dtype's rounding).
TrunkWeights initTrunk(const TransformerShape &shape, at::Generator &generator, const at::Device &device,
                       at::ScalarType dtype = at::kFloat);
std::int64_t countParameters(const TrunkWeights &weights);

at::Device toAtDevice(const TorchDevice &device);

// The batch tensors, built once per batch from the requests' tokens.
struct PaddedBatch {
    at::Tensor ids;       // Long [B, L], 0 on padding
    at::Tensor mask;      // Bool [B, L], true on real tokens
    at::Tensor positions; // Long [B, L], 0.. from each row's first real token
    at::Tensor lengths;   // Long [B], real tokens per row
};
// `rows[i]` is request i's token list; left-padded to `paddedLength`.
PaddedBatch makeLeftPaddedBatch(const std::vector<const std::vector<std::int32_t> *> &rows, int paddedLength,
                                const at::Device &device);

// Additive attention masks (0 where allowed, -inf where not), float.
// Keys only (encoder, decode steps): [B, 1, 1, S].
at::Tensor keyPaddingBias(const at::Tensor &mask);
// Causal over keys that are real; every query may see itself, so a padded
// query row never softmaxes over nothing: [B, 1, L, L].
at::Tensor causalBias(const at::Tensor &mask);

at::Tensor embed(const TrunkWeights &w, const at::Tensor &ids, const at::Tensor &positions);

// One pre-LN block on x [B, T, d], dense attention (the encoder, and the
// decoder's recomputing reference). `bias` broadcasts to [B, heads, T, T].
at::Tensor blockForward(const BlockWeights &w, const TransformerShape &shape, const at::Tensor &x,
                        const at::Tensor &bias);

at::Tensor finalNorm(const TrunkWeights &w, const at::Tensor &x);
// A decoder's next-token logits from hidden states [..., d]: the final norm,
// then the LM head tied to the token embedding: [..., vocab].
at::Tensor tiedLmHead(const TrunkWeights &w, const at::Tensor &hidden);

// The GPT-2 trunk over a paged step (paged_runner.h): per layer, LayerNorm,
// the fused QKV projection, its keys and values written into the pool, one
// paged-attention call for every token of every sequence, the output
// projection, the MLP; then the final norm and the tied LM head over the
// sampled rows only. The same ops in the same number whatever the step holds.
class Gpt2PagedTrunk final : public PagedTrunk {
public:
    // `weights` must outlive this object.
    Gpt2PagedTrunk(const TransformerShape &shape, const TrunkWeights &weights) : m_shape(shape), m_weights(weights) {}
    at::Tensor logits(const StepTensors &step, KvPool &pool) const override;

private:
    TransformerShape m_shape;
    const TrunkWeights &m_weights;
};

} // namespace bp
