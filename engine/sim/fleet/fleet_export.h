// A capacity plan (fleet_plan.h) in each serving stack's own form
// (docs/export.md "Replicas and autoscaling"):
//  - ray-serve: a Serve deployment with autoscaling_config (min_replicas =
//    the plan's least, max_replicas = its peak, target_ongoing_requests
//    from the simulated load per replica at the peak), and num_replicas for
//    a fixed fleet; the hour-of-day schedule as a comment;
//  - vllm: `vllm serve ... --data-parallel-size N` for the peak (vLLM's
//    data parallelism: N engine replicas behind its own load balancer) and
//    the per-hour sizes as comments;
//  - hpa: a Kubernetes HorizontalPodAutoscaler sketch (min/max replicas, a
//    per-pod requests-in-flight target) plus the hour-of-day schedule as a
//    KEDA cron trigger list;
//  - keda: the hour-of-day schedule as a KEDA ScaledObject whose cron
//    triggers ask each run of equal hours a cold start (180 s) early
//    (autoscale_export.h, the scheduled policy's export).
// Pure functions of the plan's document (planDocument()). Qt-free.
#pragma once

#include "engine/core/result.h"

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace bp {

// "ray-serve", "vllm", "hpa", "keda"
inline constexpr std::string_view kFleetExportFormats = "ray-serve, vllm, hpa, keda";
// Whether `format` is one of them (checked before planning).
bool isFleetExportFormat(std::string_view format);
// InvalidArgument for another format, or keda for a plan without an
// hour-of-day schedule (its windows must divide a day and cover one).
Result<std::string> exportFleetPlan(const nlohmann::json &plan, std::string_view format);

} // namespace bp
