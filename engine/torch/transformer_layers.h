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

// One layer's cache, [batch, heads, capacity, headDim] each.
struct LayerCache {
    at::Tensor keys, values;
};

// GPT-2's initialisation from `generator` (normal(0, 0.02); residual output
// projections scaled by 1/sqrt(2·layers); LayerNorms 1/0; biases 0), drawn on
// the CPU in a fixed order and then moved, so a seed gives the same weights
// on every device.
TrunkWeights initTrunk(const TransformerShape &shape, at::Generator &generator, const at::Device &device);
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

// One pre-LN block on x [B, T, d]. With a cache, the T new keys/values are
// written at `cacheOffset` and attention runs over cache[0, cacheOffset+T).
// `bias` broadcasts to [B, heads, T, S].
at::Tensor blockForward(const BlockWeights &w, const TransformerShape &shape, const at::Tensor &x,
                        const at::Tensor &bias, LayerCache *cache = nullptr, std::int64_t cacheOffset = 0);

at::Tensor finalNorm(const TrunkWeights &w, const at::Tensor &x);
// A decoder's next-token logits from hidden states [..., d]: the final norm,
// then the LM head tied to the token embedding: [..., vocab].
at::Tensor tiedLmHead(const TrunkWeights &w, const at::Tensor &hidden);

// Packed (ragged) steps: several sequences' new tokens side by side in one
// row, x [1, T, d], each sequence with its own cache. The linear layers run
// once over all T tokens; attention runs per sequence over its own cache, so
// no sequence is padded to another's length. A sequence's tokens are columns
// [offset, offset + count) of x; its cache holds `past` tokens before them and
// has room for past + count (cache->keys [1, heads, capacity, headDim]).
struct PackedSegment {
    std::int64_t offset = 0, count = 0, past = 0;
    LayerCache *cache = nullptr; // this layer's cache of the sequence
};
// One pre-LN block over a packed step; writes each segment's new keys and
// values into its cache at `past`. For one segment it computes what
// blockForward() computes for that sequence alone with a cache.
at::Tensor blockForwardPacked(const BlockWeights &w, const TransformerShape &shape, const at::Tensor &x,
                              const std::vector<PackedSegment> &segments);

} // namespace bp
