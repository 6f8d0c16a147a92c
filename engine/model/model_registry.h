// Creating a backend from a model name: "builtin:echo", the libtorch
// built-ins ("builtin:tiny-encoder", "builtin:tiny-decoder", with a size
// preset), or a TorchScript file path. Qt-free and torch-free header: the
// torch backends are linked in only when BATCHPILOT_TORCH is on.
#pragma once

#include "backend.h"
#include "engine/core/result.h"

#include <memory>
#include <string>
#include <vector>

namespace bp {

struct ModelSpec {
    std::string name = "builtin:echo"; // builtin:NAME, hf:FOLDER, hf-config:FILE.json or a .pt file
    std::string device = "auto";       // auto | cpu | cuda | cuda:N
    std::string preset = "small";      // size preset of the built-ins (see docs/models.md)
    int threads = 0;                   // torch intra-op threads; 0 = all cores
    std::uint64_t seed = 1234;         // weights of the built-ins
    // TorchScript files: the token ids (vocabSize) and the input length
    // (maxSequenceLength) the engine admits; 0 = read them from the model
    // (docs/models.md, "Limits of a TorchScript model").
    int vocabSize = 0;
    int maxSequenceLength = 0;
    // Weights and activations: auto (bfloat16 on CUDA, float32 on the CPU),
    // float32, bfloat16 or float16 (docs/models.md).
    std::string dtype = "auto";
    bool cudaGraphs = true; // decode steps as CUDA graphs (CUDA only)
};

// NotFound for an unknown name or missing file, Unavailable for a device
// that is not there, InvalidArgument for a file that is not a usable model.
Result<std::shared_ptr<Backend>> createBackend(const ModelSpec &spec);

// Names accepted by createBackend() besides file paths.
std::vector<std::string> builtinModelNames();
bool torchAvailable();

} // namespace bp
