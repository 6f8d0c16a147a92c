// batchpilot-bench device-check [--device D] [--no-decoder] [--json FILE]
#include "device_check_bench.h"

#include "engine/model/device_check.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>

namespace bp::bench {

const StageOptions &deviceCheckStage()
{
    static const StageOptions stage{
        "device-check",
        "[OPTIONS]",
        "the paged step's correctness on a device (ops and tokens against the CPU)",
        "Runs the KV write and paged-attention ops on the device against a dense float64 reference\n"
        "(float32, bfloat16, float16; decode rows, a prefill chunk beside decodes, grouped-query\n"
        "heads), then builtin:tiny-decoder (preset small, float32) on the device against the CPU,\n"
        "with CUDA graphs on and off and as continuous steps. Exit status 0 when every line passes,\n"
        "3 when one fails. Takes seconds.",
        {
            {"device", "D", "cuda, cuda:N or cpu (default cuda)"},
            {"no-decoder", "", "the ops only"},
            {"json", "FILE", "write the report as JSON"},
        }};
    return stage;
}

int runDeviceCheckBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, deviceCheckStage()); rc >= 0)
        return rc;
    const std::string device = args.str("device", "cuda");
    auto report = checkDevice(device, !args.has("no-decoder"));
    if (!report) {
        std::cerr << "batchpilot-bench device-check: " << report.status().toString() << "\n";
        return 1;
    }
    std::printf("batchpilot-bench device-check on %s\n", report->device.c_str());
    nlohmann::json lines = nlohmann::json::array();
    for (const DeviceCheckLine &l : report->lines) {
        std::printf("  %s  %-78s error %.3g (limit %.3g)  %s\n", l.passed ? "PASS" : "FAIL", l.name.c_str(),
                    l.error, l.limit, l.detail.c_str());
        lines.push_back({{"name", l.name},
                         {"passed", l.passed},
                         {"error", l.error},
                         {"limit", l.limit},
                         {"detail", l.detail}});
    }
    std::printf("%s\n", report->passed() ? "all passed" : "FAILED");
    if (args.has("json"))
        if (int rc = writeJsonOption(args, {{"device", report->device}, {"passed", report->passed()}, {"lines", lines}});
            rc != 0)
            return rc;
    return report->passed() ? 0 : 3;
}

} // namespace bp::bench
