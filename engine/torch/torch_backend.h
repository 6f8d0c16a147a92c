// What every libtorch backend shares: where it runs (device,
// intra-op threads), the memory probe, and the preamble around every call into
// torch: the calling thread's torch threads, InferenceMode, and an exception
// mapped to a Status (torchFailure: ResourceExhausted for out-of-memory,
// Internal otherwise). builtin:tiny-encoder, builtin:tiny-decoder and
// TorchScript files derive from TorchBackend; the decoders' step models use
// runTorch() directly.
//
// Internal to engine/torch/ (includes ATen).
#pragma once

#include "engine/model/model_registry.h"
#include "torch_device.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <memory>
#include <string>
#include <utility>

namespace bp {

// Where a torch backend runs, resolved from a ModelSpec.
struct TorchPlacement {
    TorchDevice device;
    at::Device atDevice{at::kCPU};
    int threads = 1;
    at::ScalarType dtype = at::kFloat;
    std::string dtypeName = "float32";
    bool cudaGraphs = true;
};

// ModelSpec::dtype on `device`: auto is bfloat16 on CUDA and float32 on the
// CPU; float32|fp32, bfloat16|bf16, float16|fp16|half. InvalidArgument
// otherwise.
Result<std::pair<at::ScalarType, std::string>> resolveDtype(const std::string &spec, const TorchDevice &device);

// resolveTorchDevice + resolveTorchThreads + resolveDtype, and the
// process-wide set-up a torch backend needs before it builds anything (this
// thread's intra-op threads, keepHostMemoryMapped()). Unavailable /
// InvalidArgument for the device or dtype.
Result<TorchPlacement> prepareTorch(const ModelSpec &spec);

// Runs `work()` (returning a Status) on `threads` intra-op threads under
// InferenceMode; an exception becomes torchFailure(context(), e). `context`
// is called only on failure.
template <class Context, class Work> Status runTorch(int threads, Context &&context, Work &&work)
{
    try {
        useTorchThreads(threads);
        c10::InferenceMode guard;
        return std::forward<Work>(work)();
    } catch (const std::exception &e) {
        return torchFailure(std::string(std::forward<Context>(context)()), e);
    }
}

// Builds a T, returned as a shared_ptr<Base>; an exception while building (weights that do not fit,
// a failing device) becomes torchFailure("cannot build <what>", e).
template <class Base, class T, class... Args>
Result<std::shared_ptr<Base>> buildTorchBackend(const std::string &what, Args &&...args)
{
    try {
        c10::InferenceMode guard;
        return std::shared_ptr<Base>(std::make_shared<T>(std::forward<Args>(args)...));
    } catch (const std::exception &e) {
        return torchFailure("cannot build " + what, e);
    }
}

// The base of every torch backend. `Interface` is Backend or an interface
// derived from it (DecoderModel), so one base serves all three backends.
template <class Interface = Backend> class TorchBackend : public Interface {
public:
    const ModelInfo &info() const override { return m_info; }

    // On a CUDA device, probeLargestBatch(); host memory is not the limit on
    // the CPU (nullopt).
    std::optional<int> probeMaxBatch(int paddedLength, int upTo) override
    {
        if (m_device.is_cpu())
            return std::nullopt;
        return probeLargestBatch(*this, paddedLength, upTo);
    }

protected:
    explicit TorchBackend(const TorchPlacement &placement)
        : m_device(placement.atDevice), m_threads(placement.threads)
    {
        m_info.device = placement.device.name;
        m_info.dtype = placement.dtypeName;
    }

    // runTorch() on this backend's threads.
    template <class Context, class Work> Status guarded(Context &&context, Work &&work) const
    {
        return runTorch(m_threads, std::forward<Context>(context), std::forward<Work>(work));
    }

    ModelInfo m_info;
    at::Device m_device;
    int m_threads;
};

} // namespace bp
