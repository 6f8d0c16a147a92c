#include "engine/model/model_registry.h"

#include "engine/model/device_check.h"
#include "engine/model/memory_bandwidth.h"

#ifdef BATCHPILOT_HAVE_TORCH
#include "torch_models.h"
#endif

namespace bp {

Result<std::shared_ptr<Backend>> createBackend(const ModelSpec &spec)
{
    if (spec.name == "builtin:echo")
        return makeEchoBackend();
#ifdef BATCHPILOT_HAVE_TORCH
    return createTorchBackend(spec);
#else
    return Status(StatusCode::NotFound,
                  "model '" + spec.name +
                      "' needs libtorch, and this build has none (BATCHPILOT_TORCH=OFF); "
                      "only builtin:echo is available");
#endif
}

std::vector<std::string> builtinModelNames()
{
    std::vector<std::string> names{"builtin:echo"};
#ifdef BATCHPILOT_HAVE_TORCH
    for (auto &n : torchBuiltinNames())
        names.push_back(n);
#endif
    return names;
}

Result<DeviceCheckReport> checkDevice(const std::string &device, bool decoder)
{
#ifdef BATCHPILOT_HAVE_TORCH
    return checkTorchDevice(device, decoder);
#else
    (void)decoder;
    return Status(StatusCode::Unavailable,
                  "checking device " + device + " needs libtorch (BATCHPILOT_TORCH=OFF)");
#endif
}

Result<BandwidthReport> measureMemoryBandwidth(const std::string &device, std::int64_t bytes, int repeats,
                                               int threads)
{
#ifdef BATCHPILOT_HAVE_TORCH
    return measureTorchMemoryBandwidth(device, bytes, repeats, threads);
#else
    (void)bytes, (void)repeats, (void)threads;
    return Status(StatusCode::Unavailable, "measuring the bandwidth of " + device + " needs libtorch (BATCHPILOT_TORCH=OFF)");
#endif
}

bool torchAvailable()
{
#ifdef BATCHPILOT_HAVE_TORCH
    return true;
#else
    return false;
#endif
}

} // namespace bp
