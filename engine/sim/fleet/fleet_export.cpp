#include "engine/sim/fleet/fleet_export.h"
#include "engine/sim/fleet/autoscale_export.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace bp {

namespace {

struct Summary {
    int least = 0, peak = 0;
    double peakRouted = 0; // mean requests a replica had in flight at the peak (busy fraction × in-flight)
    std::vector<int> daily;
};

Summary summarise(const nlohmann::json &plan)
{
    Summary s;
    s.peak = plan.value("peak_replicas", 0);
    s.least = s.peak;
    double busy = 0;
    for (const auto &w : plan.value("windows", nlohmann::json::array())) {
        if (!w.value("done", false))
            continue;
        const int n = w.value("replicas", 0);
        if (n > 0)
            s.least = std::min(s.least, n);
        if (n == s.peak)
            for (const auto &b : w.value("replica_busy", nlohmann::json::array()))
                busy = std::max(busy, b.get<double>());
    }
    s.least = std::max(1, s.least);
    s.peak = std::max(s.least, s.peak);
    s.peakRouted = busy;
    s.daily = plan.value("daily_schedule", std::vector<int>{});
    return s;
}

std::string hhmm(std::size_t slot, std::size_t slots)
{
    const std::size_t minutes = slot * 24 * 60 / std::max<std::size_t>(1, slots);
    const auto two = [](std::size_t v) { return (v < 10 ? "0" : "") + std::to_string(v); };
    return two(minutes / 60 % 24) + ":" + two(minutes % 60);
}

// The busy fraction at the peak as a per-replica in-flight target (at least
// 1): a replica running one request at a time at that load has about this
// many ongoing.
int ongoingTarget(const Summary &s)
{
    return std::max(1, int(std::lround(std::max(1.0, s.peakRouted * 2))));
}

// The plan's schedule as the scheduled policy, asked a cold start early.
Result<std::string> kedaSchedule(const Summary &s, const std::string &slo)
{
    if (s.daily.empty())
        return Status(
            StatusCode::InvalidArgument,
            "the plan has no hour-of-day schedule for KEDA's cron triggers (plan windows that divide a "
            "day, over at least a day of trace)");
    ScheduledKnobs knobs;
    knobs.replicas = s.daily;
    knobs.slotS = 86400.0 / double(s.daily.size());
    knobs.leadS = 180; // a cold start, as `autoscale --lead` defaults to
    ManifestTarget target;
    target.source = "batchpilot plan (SLO " + slo + ")";
    return exportAutoscaler(knobs, "keda", target);
}

} // namespace

bool isFleetExportFormat(std::string_view format)
{
    return format == "ray-serve" || format == "vllm" || format == "hpa" || format == "keda";
}

Result<std::string> exportFleetPlan(const nlohmann::json &plan, std::string_view format)
{
    const Summary s = summarise(plan);
    std::ostringstream out;
    const std::string slo = plan.value("slo", "");
    if (format == "ray-serve") {
        out << "# Ray Serve: replicas from batchpilot plan (SLO " << slo << ", peak " << s.peak << ")\n"
            << "applications:\n"
            << "  - name: llm\n"
            << "    deployments:\n"
            << "      - name: LLMDeployment\n"
            << "        # a fixed fleet: num_replicas: " << s.peak << "\n"
            << "        autoscaling_config:\n"
            << "          min_replicas: " << s.least << "\n"
            << "          max_replicas: " << s.peak << "\n"
            << "          target_ongoing_requests: " << ongoingTarget(s) << "\n";
        if (!s.daily.empty()) {
            out << "# replicas needed by hour of day (the plan's schedule):\n";
            for (std::size_t i = 0; i < s.daily.size(); ++i)
                out << "#   " << hhmm(i, s.daily.size()) << "  " << s.daily[i] << "\n";
        }
        return out.str();
    }
    if (format == "vllm") {
        out << "# vLLM data parallelism: one engine per replica behind vLLM's own load balancer\n"
            << "# (SLO " << slo << "; the peak window needs " << s.peak << ")\n"
            << "vllm serve MODEL --data-parallel-size " << s.peak << "\n";
        if (!s.daily.empty()) {
            out << "# by hour of day (restart with that --data-parallel-size, or run that many replicas):\n";
            for (std::size_t i = 0; i < s.daily.size(); ++i)
                out << "#   " << hhmm(i, s.daily.size()) << "  --data-parallel-size " << s.daily[i] << "\n";
        }
        return out.str();
    }
    if (format == "hpa") {
        out << "# Kubernetes: an HPA sketch from batchpilot plan (SLO " << slo << ")\n"
            << "apiVersion: autoscaling/v2\n"
            << "kind: HorizontalPodAutoscaler\n"
            << "metadata:\n  name: llm\n"
            << "spec:\n"
            << "  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: llm}\n"
            << "  minReplicas: " << s.least << "\n"
            << "  maxReplicas: " << s.peak << "\n"
            << "  metrics:\n"
            << "    - type: Pods\n"
            << "      pods:\n"
            << "        metric: {name: batchpilot_requests_in_flight}\n"
            << "        target: {type: AverageValue, averageValue: \"" << ongoingTarget(s) << "\"}\n";
        if (!s.daily.empty()) {
            out << "---\n# the hour-of-day schedule as KEDA cron triggers (a ScaledObject's "
                   "spec.triggers):\n";
            for (std::size_t i = 0; i < s.daily.size(); ++i) {
                const std::size_t next = (i + 1) % s.daily.size();
                out << "# - type: cron\n#   metadata: {timezone: UTC, start: \""
                    << hhmm(i, s.daily.size()).substr(3) << " " << hhmm(i, s.daily.size()).substr(0, 2)
                    << " * * *\", end: \"" << hhmm(next, s.daily.size()).substr(3) << " "
                    << hhmm(next, s.daily.size()).substr(0, 2) << " * * *\", desiredReplicas: \""
                    << s.daily[i] << "\"}\n";
            }
        }
        return out.str();
    }
    if (format == "keda")
        return kedaSchedule(s, slo);
    return Status(StatusCode::InvalidArgument, "unknown fleet export format '" + std::string(format) + "' (" +
                                                   std::string(kFleetExportFormats) + ")");
}

} // namespace bp
