#include "torch_backend.h"

#include "transformer_layers.h"

namespace bp {

Result<std::pair<at::ScalarType, std::string>> resolveDtype(const std::string &spec, const TorchDevice &device)
{
    if (spec.empty() || spec == "auto")
        return device.cuda ? std::pair{at::kBFloat16, std::string("bfloat16")} : std::pair{at::kFloat, std::string("float32")};
    if (spec == "float32" || spec == "fp32")
        return std::pair{at::kFloat, std::string("float32")};
    if (spec == "bfloat16" || spec == "bf16")
        return std::pair{at::kBFloat16, std::string("bfloat16")};
    if (spec == "float16" || spec == "fp16" || spec == "half")
        return std::pair{at::kHalf, std::string("float16")};
    return Status(StatusCode::InvalidArgument,
                  "unknown dtype '" + spec + "': expected auto, float32, bfloat16 or float16");
}

Result<TorchPlacement> prepareTorch(const ModelSpec &spec)
{
    auto device = resolveTorchDevice(spec.device);
    if (!device)
        return device.status();
    auto dtype = resolveDtype(spec.dtype, *device);
    if (!dtype)
        return dtype.status();
    TorchPlacement p;
    p.device = *device;
    p.dtype = dtype->first;
    p.dtypeName = dtype->second;
    p.cudaGraphs = spec.cudaGraphs;
    p.atDevice = toAtDevice(*device);
    p.threads = resolveTorchThreads(spec.threads);
    useTorchThreads(p.threads);
    keepHostMemoryMapped();
    return p;
}

} // namespace bp
