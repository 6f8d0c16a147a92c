// Entry point of the libtorch backends for the model registry
// (engine/torch/model_registry.cpp). Torch-free header: including it costs nothing.
//
// Names:
//   builtin:tiny-encoder   transformer encoder classifier (tiny_encoder.h)
//   builtin:tiny-decoder   GPT-style decoder with a KV cache (tiny_decoder.h)
//   a path                 a TorchScript file: any name ending in ".pt" or
//                          containing '/' (torchscript_backend.h)
// ModelSpec::preset picks the built-ins' size (model_presets.h), ::seed their
// weights, ::device the device (torch_device.h), ::threads the intra-op
// threads (0 = every core).
#pragma once

#include "engine/model/model_registry.h"

#include <memory>
#include <string>
#include <vector>

namespace bp {

// NotFound for an unknown name, preset or a missing file; Unavailable for a
// device that is not there; InvalidArgument for a file that is not a usable
// model or a malformed device string.
Result<std::shared_ptr<Backend>> createTorchBackend(const ModelSpec &spec);

// "builtin:tiny-encoder", "builtin:tiny-decoder"
std::vector<std::string> torchBuiltinNames();

} // namespace bp
