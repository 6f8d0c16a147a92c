// Autoscaler policies (autoscaler.h) as the manifests a Kubernetes cluster
// runs (docs/export.md "Autoscaler manifests"):
//  - keda: a keda.sh/v1alpha1 ScaledObject on a Deployment. Reactive: a
//    `prometheus` trigger whose query is the policy's metric on the server
//    (the names engine/telemetry/target_metrics.h maps), threshold = the
//    target per replica (AverageValue: HPA divides the fleet's sum by the
//    replicas; KV usage is already a mean, so Value), the stabilization
//    windows as the HPA behavior KEDA creates. Scheduled: one `cron` trigger
//    per run of equal slots, asked `lead` early. Predictive: KEDA has no
//    forecaster, so the reactive policy on the request rate at
//    replicaRate / headroom per replica, said in a comment;
//  - hpa: an autoscaling/v2 HorizontalPodAutoscaler on the same metric as a
//    Pods metric (AverageValue) under the name prometheus-adapter exposes
//    it (the rule is in a comment). HPA has no schedule: the scheduled
//    policy is KEDA's only.
// HPA's tolerance is the controller manager's, cluster-wide: a tolerance
// other than 0.1 is a comment. Pure functions returning YAML text. Qt-free.
#pragma once

#include "engine/core/result.h"
#include "engine/sim/fleet/autoscaler.h"

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bp {

// What the manifest points at and how it reads the fleet.
struct ManifestTarget {
    std::string deployment = "vllm"; // the Deployment scaled (a DNS label), also the object's name
    std::string ns = "default";      // its namespace (a DNS label)
    std::string prometheus = "http://prometheus.monitoring:9090"; // KEDA's serverAddress
    std::string server = "vllm";                 // whose metric names: vllm, tgi, sglang, batchpilot
    std::string timezone = "UTC";                // the cron triggers' (an IANA name)
    double periodS = 15;                         // the decision period: KEDA's pollingInterval
    std::string source = "batchpilot autoscale"; // named in the header comment
};

inline constexpr std::string_view kAutoscaleExportFormats = "keda, hpa";
inline constexpr std::string_view kManifestServers = "vllm, tgi, sglang, batchpilot";

// The series `server` exposes for `metric` (RequestRate: its request
// counter). InvalidArgument for an unknown server, or a metric it lacks
// (TGI exports no KV usage).
Result<std::string> serverSeries(std::string_view server, ScaleMetric metric);

// One KEDA cron trigger: replicas from startMinute to endMinute of the day
// (minutes after midnight in the trigger's time zone, lead included; a run
// may wrap past midnight).
struct CronRun {
    int startMinute = 0, endMinute = 0;
    int replicas = 0;
};
// The schedule (slot 0 begins at midnight) as runs of equal slots, each
// shifted `lead` earlier (rounded up to a whole minute). Slots of whole
// minutes whose cycle divides a day; slots asking 0 replicas get no run
// (KEDA falls back to minReplicaCount); a run of the whole day is split in
// two (a cron trigger's start and end must differ).
Result<std::vector<CronRun>> cronRuns(const ScheduledKnobs &knobs);
// "M H * * *"
std::string cronAt(int minuteOfDay);

// The policy's manifest in `format` ("keda" or "hpa"). InvalidArgument for
// another format, a target that is not a name, or a policy the format cannot
// express (a schedule as an HPA).
Result<std::string> exportAutoscaler(const AutoscaleKnobs &knobs, std::string_view format,
                                     const ManifestTarget &target);

} // namespace bp
