#include "torch_device.h"

#include "cpu_blas.h"
#include "cuda_plugin.h"

#include "engine/core/out_of_memory.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <charconv>
#include <cstdlib>
#include <mutex>
#include <thread>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace bp {

namespace {

// CUDA devices, or why there are none (the plugin's loader's words).
Result<int> cudaDevices()
{
    auto api = cudaPlugin();
    if (!api)
        return api.status();
    char err[512] = {};
    const int n = (*api)->deviceCount(err, sizeof err);
    if (n < 0)
        return Status(StatusCode::Unavailable, std::string("CUDA is not usable: ") + err);
    return n;
}

} // namespace

int torchCudaDeviceCount()
{
    if (!nvidiaDriverPresent() && !std::getenv("BATCHPILOT_CUDA_PLUGIN"))
        return 0;
    auto n = cudaDevices();
    return n ? *n : 0;
}

Result<TorchDevice> resolveTorchDevice(const std::string &spec)
{
    if (spec == "cpu")
        return TorchDevice{};
    if (spec == "auto")
        return torchCudaDeviceCount() > 0 ? TorchDevice{true, 0, "cuda:0"} : TorchDevice{};
    int index = 0;
    if (spec.rfind("cuda:", 0) == 0) {
        const char *first = spec.data() + 5, *last = spec.data() + spec.size();
        auto [end, ec] = std::from_chars(first, last, index);
        if (ec != std::errc() || end != last || first == last || index < 0)
            return Status(StatusCode::InvalidArgument,
                          "bad device '" + spec + "': expected auto, cpu, cuda or cuda:N with N >= 0");
    } else if (spec != "cuda") {
        return Status(StatusCode::InvalidArgument,
                      "unknown device '" + spec + "': expected auto, cpu, cuda or cuda:N");
    }
    auto devices = cudaDevices();
    if (!devices)
        return Status(StatusCode::Unavailable, "device '" + spec +
                                                   "' requested: " + devices.status().message() +
                                                   "; use --device cpu, or auto to fall back to the CPU");
    const int count = *devices;
    if (index >= count)
        return Status(StatusCode::Unavailable, "device '" + spec + "' requested, but libtorch sees only " +
                                                   std::to_string(count) + " CUDA device(s)");
    return TorchDevice{true, index, "cuda:" + std::to_string(index)};
}

int resolveTorchThreads(int requested)
{
    if (requested > 0)
        return requested;
    const unsigned cores = std::thread::hardware_concurrency();
    return cores > 0 ? int(cores) : 1;
}

void useTorchThreads(int threads)
{
    thread_local int current = 0;
    if (threads > 0 && threads != current) {
        at::set_num_threads(threads);
        setBlasThreads(threads);
        current = threads;
    }
}

void keepHostMemoryMapped()
{
#ifdef __GLIBC__
    static std::once_flag once;
    std::call_once(once, [] {
        mallopt(M_MMAP_THRESHOLD, 32 << 20); // glibc's maximum on 64-bit
        mallopt(M_TRIM_THRESHOLD, 512 << 20);
        mallopt(M_TOP_PAD, 64 << 20);
    });
#endif
}

namespace {

Status runSynthetic(Backend &backend, int batch, int length)
{
    std::vector<Request> requests(static_cast<std::size_t>(batch));
    BatchInput input;
    for (auto &r : requests) {
        r.tokens.assign(std::size_t(length), 1);
        r.maxNewTokens = backend.info().generative ? 1 : 0;
        input.requests.push_back(&r);
    }
    input.paddedLength = length;
    std::vector<SequenceResult> out(requests.size());
    return backend.run(input, out);
}

} // namespace

std::optional<int> probeLargestBatch(Backend &backend, int length, int upTo)
{
    length = std::max(1, std::min(length, backend.info().maxSequenceLength));
    int fits = 0, fails = upTo + 1;
    for (int n = 1; n <= upTo; n = std::min(upTo, n * 2)) {
        const Status s = runSynthetic(backend, n, length);
        if (s.code() == StatusCode::ResourceExhausted) {
            fails = n;
            break;
        }
        if (!s)
            return fits > 0 ? std::optional<int>(fits) : std::nullopt;
        fits = n;
        if (n == upTo)
            return fits;
    }
    while (fails - fits > 1) {
        const int mid = fits + (fails - fits) / 2;
        const Status s = runSynthetic(backend, mid, length);
        if (s.code() == StatusCode::ResourceExhausted)
            fails = mid;
        else if (s)
            fits = mid;
        else
            break;
    }
    return fits;
}

Status torchFailure(const std::string &context, const std::exception &error)
{
    std::string what = error.what();
    if (const auto *c10error = dynamic_cast<const c10::Error *>(&error))
        what = c10error->what_without_backtrace();
    if (const auto eol = what.find('\n'); eol != std::string::npos)
        what.resize(eol);
    return Status(looksLikeOutOfMemory(what) ? StatusCode::ResourceExhausted : StatusCode::Internal,
                  context + ": " + what);
}

} // namespace bp
