// Where a Hugging Face decoder's weights come from (llama_model.cpp makes
// them): a safetensors checkpoint, memory-mapped and copied once into the
// dtype and device, or seeded random numbers drawn on the device as
// transformers initialises them. The model files (llama_model.cpp,
// gemma3_model.cpp) ask for tensors by their checkpoint names.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bp {

class WeightSource {
public:
    virtual ~WeightSource() = default;
    // The tensor `name` of `shape` on the device in the dtype (throws naming it).
    virtual at::Tensor get(const std::string &name, std::vector<std::int64_t> shape) = 0;
};

} // namespace bp
