#include "engine/model/memory_bandwidth.h"

#include "cuda_support.h"
#include "torch_device.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <vector>

namespace bp {

namespace {

std::string cpuModelName()
{
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0)
            if (auto colon = line.find(':'); colon != std::string::npos)
                return line.substr(line.find_first_not_of(" \t", colon + 1));
    return {};
}

} // namespace

Result<BandwidthReport> measureTorchMemoryBandwidth(const std::string &deviceSpec, std::int64_t bytes, int repeats,
                                                    int threads)
{
    if (bytes < (std::int64_t(1) << 20))
        return Status(StatusCode::InvalidArgument,
                      "the copied buffer must be at least 1 MiB (got " + std::to_string(bytes) + " bytes)");
    if (repeats < 1)
        return Status(StatusCode::InvalidArgument, "repeats must be at least 1");
    auto resolved = resolveTorchDevice(deviceSpec);
    if (!resolved)
        return resolved.status();
    BandwidthReport report;
    report.device = resolved->name;
    report.bytes = bytes;
    report.repeats = repeats;
    const at::Device device(resolved->name);
    if (!resolved->cuda) {
        report.threads = resolveTorchThreads(threads);
        useTorchThreads(report.threads);
        report.deviceName = cpuModelName();
    }
    try {
        const auto options = at::TensorOptions().dtype(at::kByte).device(device);
        at::Tensor src = at::empty({bytes}, options);
        at::Tensor dst = at::empty({bytes}, options);
        src.fill_(1); // touch every page before timing (first-touch faults are not bandwidth)
        dst.fill_(0);
        std::vector<double> seconds;
        for (int i = 0; i <= repeats; ++i) {
            synchronize(device);
            const auto start = std::chrono::steady_clock::now();
            dst.copy_(src);
            synchronize(device);
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (i > 0) // the first copy warms caches and the allocator
                seconds.push_back(s);
        }
        std::sort(seconds.begin(), seconds.end());
        report.minSeconds = seconds.front();
        report.maxSeconds = seconds.back();
        const std::size_t n = seconds.size();
        report.medianSeconds = n % 2 ? seconds[n / 2] : 0.5 * (seconds[n / 2 - 1] + seconds[n / 2]);
    } catch (const std::exception &e) {
        return torchFailure("copy bandwidth on " + report.device, e);
    }
    return report;
}

} // namespace bp
