// batchpilot-bench bandwidth [--device D] [--mib N] [--repeats N] [--threads N] [--json FILE]
#include "bandwidth_bench.h"

#include "engine/model/memory_bandwidth.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace bp::bench {

const StageOptions &bandwidthStage()
{
    static const StageOptions stage{
        "bandwidth",
        "[OPTIONS]",
        "the device's memory bandwidth, measured by a copy (the floor of a memory-bound step)",
        "Copies one buffer into another on the device (libtorch's copy_: device to device on CUDA,\n"
        "ATen's parallel copy on the CPU) once to warm up, then --repeats times, and prints the\n"
        "median copy as bytes read plus bytes written per second, with the fastest and slowest.\n"
        "The buffer should be far larger than the last-level cache. Takes about a second.",
        {
            {"device", "D", "cpu, cuda or cuda:N (default cpu)"},
            {"mib", "N", "size of each of the two buffers in MiB (default 1024)"},
            {"repeats", "N", "timed copies (default 10)"},
            {"threads", "N", "CPU intra-op threads, 0 = every core (default 0)"},
            {"json", "FILE", "write the figures as JSON"},
        }};
    return stage;
}

int runBandwidthBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, bandwidthStage()); rc >= 0)
        return rc;
    const std::string device = args.str("device", "cpu");
    const double mib = args.num("mib", 1024), repeats = args.num("repeats", 10), threads = args.num("threads", 0);
    if (mib < 1 || mib > 1 << 20 || repeats < 1 || repeats > 10000 || threads < 0 || threads > 4096) {
        std::cerr << "batchpilot-bench bandwidth: --mib must be in [1, 1048576], --repeats in [1, 10000], "
                     "--threads in [0, 4096]\n";
        return 2;
    }
    auto report = measureMemoryBandwidth(device, std::int64_t(mib * (1 << 20)), int(repeats), int(threads));
    if (!report) {
        std::cerr << "batchpilot-bench bandwidth: " << report.status().toString() << "\n";
        return 1;
    }
    const double gbs = report->bytesPerSecond() / 1e9;
    std::printf("batchpilot-bench bandwidth on %s%s%s%s\n", report->device.c_str(),
                report->deviceName.empty() ? "" : " (", report->deviceName.c_str(),
                report->deviceName.empty() ? "" : ")");
    if (report->threads > 0)
        std::printf("  threads           %d\n", report->threads);
    std::printf("  buffer            %.0f MiB, %d copies\n", double(report->bytes) / (1 << 20), report->repeats);
    std::printf("  copy              median %.3f ms  (min %.3f, max %.3f)\n", report->medianSeconds * 1e3,
                report->minSeconds * 1e3, report->maxSeconds * 1e3);
    std::printf("  bandwidth         %.1f GB/s (read + write, median copy)\n", gbs);
    if (args.has("json"))
        return writeJsonOption(args, {{"device", report->device},
                                      {"device_name", report->deviceName},
                                      {"bytes", report->bytes},
                                      {"repeats", report->repeats},
                                      {"threads", report->threads},
                                      {"median_s", report->medianSeconds},
                                      {"min_s", report->minSeconds},
                                      {"max_s", report->maxSeconds},
                                      {"bytes_per_s", report->bytesPerSecond()}});
    return 0;
}

} // namespace bp::bench
