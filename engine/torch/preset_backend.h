// The factory the built-in transformers share (builtin:tiny-encoder,
// builtin:tiny-decoder): a size preset, a device, a seed.
//
// Internal to engine/torch/ (includes ATen through torch_backend.h).
#pragma once

#include "model_presets.h"
#include "torch_backend.h"

#include <memory>
#include <string>

namespace bp {

// Builds T(shape, placement, spec.seed) as a Base, the shape of `spec.preset`
// (model_presets.h) on the placement `spec` asks for (prepareTorch). NotFound
// for an unknown preset; Unavailable / InvalidArgument for the device;
// a failure while building is "cannot build NAME (PRESET) on DEVICE: ...".
template <class Base, class T>
Result<std::shared_ptr<Base>> makePresetBackend(const std::string &name, const ModelSpec &spec)
{
    auto shape = transformerPreset(spec.preset);
    if (!shape)
        return shape.status();
    auto placement = prepareTorch(spec);
    if (!placement)
        return placement.status();
    return buildTorchBackend<Base, T>(name + " (" + spec.preset + ") on " + placement->device.name, *shape,
                                      *placement, spec.seed);
}

} // namespace bp
