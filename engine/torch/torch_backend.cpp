#include "torch_backend.h"

#include "transformer_layers.h"

namespace bp {

Result<TorchPlacement> prepareTorch(const ModelSpec &spec)
{
    auto device = resolveTorchDevice(spec.device);
    if (!device)
        return device.status();
    TorchPlacement p;
    p.device = *device;
    p.atDevice = toAtDevice(*device);
    p.threads = resolveTorchThreads(spec.threads);
    useTorchThreads(p.threads);
    keepHostMemoryMapped();
    return p;
}

} // namespace bp
