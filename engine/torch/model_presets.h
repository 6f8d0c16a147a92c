// Size presets of the built-in transformers (builtin:tiny-encoder and
// builtin:tiny-decoder share them). Torch-free: the registry, the docs table
// and the tests read these without paying for torch headers.
//
//   preset  layers  d_model heads  d_ff  positions  vocab   decoder params
//   test         2       32     2    64        256    256          ~0.04 M
//   small        4      256     4  1024       1024    256          ~3.5 M   (default; CPU-friendly)
//   medium       8      512     8  2048       1024    256          ~26 M    (weights ≫ CPU cache)
//   gpt2        12      768    12  3072       1024  50257          124.4 M  (GPT-2 small's shape)
//
// The decoder ties its output projection to the token embedding (as GPT-2
// does), so `gpt2` has exactly GPT-2 small's 124,439,808 parameters. The
// encoder adds a classifier head of `classes` outputs instead.
#pragma once

#include "engine/core/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bp {

struct TransformerShape {
    std::string preset;
    int layers = 0;
    int dModel = 0;
    int heads = 0;
    int dFF = 0;
    int maxPositions = 0; // input + generated tokens must fit
    int vocab = 256;
    int classes = 4; // encoder only: class logits per sequence

    int headDim() const { return dModel / heads; }
};

// NotFound naming the known presets when `name` is not one of them.
Result<TransformerShape> transformerPreset(const std::string &name);
std::vector<std::string> transformerPresetNames();

// Parameter counts computed from the shape (the backends also count their
// real tensors; tests check the two agree).
std::int64_t decoderParameterCount(const TransformerShape &shape);
std::int64_t encoderParameterCount(const TransformerShape &shape);

} // namespace bp
