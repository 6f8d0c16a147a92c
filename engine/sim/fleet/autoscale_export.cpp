#include "engine/sim/fleet/autoscale_export.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace bp {

namespace {

constexpr int kDayMinutes = 24 * 60;

Status invalid(std::string message)
{
    return Status(StatusCode::InvalidArgument, std::move(message));
}

// The series each server exposes (engine/telemetry/target_metrics.h's table
// and requestsCounter()); empty where it has none.
struct ServerSeries {
    std::string_view server, queue, running, kv, requests;
};
constexpr ServerSeries kServers[] = {
    {"vllm", "vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
     "vllm:request_success_total"},
    {"tgi", "tgi_queue_size", "tgi_batch_current_size", "", "tgi_request_count"},
    {"sglang", "sglang:num_queue_reqs", "sglang:num_running_reqs", "sglang:token_usage",
     "sglang:num_requests_total"},
    {"batchpilot", "batchpilot_queue_depth", "batchpilot_running_sequences",
     "batchpilot_kv_cache_usage_ratio", "batchpilot_requests_accepted_total"},
};

// A number as YAML and KEDA read it: shortest form, no exponent for the
// ranges the knobs allow.
std::string num(double v)
{
    std::ostringstream out;
    out.precision(6);
    out << v;
    return out.str();
}

// A Kubernetes quantity: whole numbers as they are, fractions in thousandths
// ("700m"), rounded up as the API server would.
std::string quantity(double v)
{
    if (std::abs(v - std::round(v)) < 1e-9)
        return std::to_string(std::llround(v));
    return std::to_string(std::max<long long>(1, (long long)std::ceil(v * 1000 - 1e-9))) + "m";
}

// A DNS label (RFC 1123): what a Deployment's pods and a namespace are
// named by; anything else could not be a name and could break the YAML.
bool isDnsLabel(std::string_view s)
{
    if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-')
        return false;
    return std::all_of(s.begin(), s.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; });
}

Status checkTarget(const ManifestTarget &t)
{
    if (!isDnsLabel(t.deployment))
        return invalid("deployment '" + t.deployment +
                       "' is not a DNS label (lowercase letters, digits, '-')");
    if (!isDnsLabel(t.ns))
        return invalid("namespace '" + t.ns + "' is not a DNS label (lowercase letters, digits, '-')");
    const bool url = (t.prometheus.starts_with("http://") || t.prometheus.starts_with("https://")) &&
                     std::none_of(t.prometheus.begin(), t.prometheus.end(), [](char c) {
                         return c <= ' ' || c == '"' || c == '\'' || c == '\\' || c == '#' || c == 127;
                     });
    if (!url)
        return invalid("prometheus '" + t.prometheus + "' is not an http(s) URL");
    const bool tz = !t.timezone.empty() && std::all_of(t.timezone.begin(), t.timezone.end(), [](char c) {
        return std::isalnum((unsigned char)c) || c == '/' || c == '_' || c == '-' || c == '+';
    });
    if (!tz)
        return invalid("timezone '" + t.timezone + "' is not a time zone name (UTC, Europe/Paris)");
    if (!std::isfinite(t.periodS) || t.periodS <= 0)
        return invalid("the decision period must be positive");
    return Status::ok();
}

Result<int> windowSeconds(const char *name, double s)
{
    if (s > 3600)
        return invalid(std::string(name) + " " + num(s) +
                       " s: HPA's stabilization windows are at most 3600 s");
    return int(std::lround(s));
}

void header(std::ostream &out, const ManifestTarget &t, const std::string &what)
{
    out << "# " << what << "\n# from " << t.source << "; apply with kubectl apply -f FILE\n";
}

void metadata(std::ostream &out, const ManifestTarget &t)
{
    out << "metadata:\n  name: " << t.deployment << "\n  namespace: " << t.ns << "\n";
}

void scaleTargetRef(std::ostream &out, const ManifestTarget &t, const char *indent)
{
    out << indent << "scaleTargetRef:\n"
        << indent << "  apiVersion: apps/v1\n"
        << indent << "  kind: Deployment\n"
        << indent << "  name: " << t.deployment << "\n";
}

void behavior(std::ostream &out, int upS, int downS, const char *indent)
{
    out << indent << "behavior:\n"
        << indent << "  scaleUp:\n"
        << indent << "    stabilizationWindowSeconds: " << upS << "\n"
        << indent << "  scaleDown:\n"
        << indent << "    stabilizationWindowSeconds: " << downS << "\n";
}

void toleranceNote(std::ostream &out, double tolerance)
{
    if (std::abs(tolerance - 0.1) > 1e-9)
        out << "# The policy's tolerance " << num(tolerance)
            << " is not a field here: HPA's tolerance is cluster-wide (kube-controller-manager\n"
            << "# --horizontal-pod-autoscaler-tolerance, default 0.1).\n";
}

// What a reactive manifest needs from a policy: the metric, its target per
// replica, the windows and bounds (a predictive policy exports as one).
struct Reactive {
    ScaleMetric metric = ScaleMetric::QueueDepth;
    double target = 1, tolerance = 0.1, upS = 0, downS = 300;
    ScaleBounds bounds;
    std::string note; // said above the manifest
};

// The PromQL for the metric on the target's pods: the fleet's total (KV:
// the mean), over the Deployment's pods (<deployment>-<hash>-<suffix>).
std::string promQuery(const Reactive &r, const std::string &series, const ManifestTarget &t)
{
    const std::string selector =
        "{namespace=\"" + t.ns + "\",pod=~\"" + t.deployment + "-[a-z0-9]+-[a-z0-9]+\"}";
    switch (r.metric) {
    case ScaleMetric::KvUsage: return "avg(" + series + selector + ")";
    case ScaleMetric::RequestRate: return "sum(rate(" + series + selector + "[1m]))";
    default: return "sum(" + series + selector + ")";
    }
}

// What both reactive forms read first: the server's series for the metric
// and the two stabilization windows in whole seconds.
struct ReactiveInputs {
    std::string series;
    int upS = 0, downS = 0;
};

Result<ReactiveInputs> reactiveInputs(const Reactive &r, const ManifestTarget &t)
{
    auto series = serverSeries(t.server, r.metric);
    if (!series)
        return series.status();
    auto up = windowSeconds("the scale-up window", r.upS);
    if (!up)
        return up.status();
    auto down = windowSeconds("the scale-down window", r.downS);
    if (!down)
        return down.status();
    return ReactiveInputs{std::move(*series), *up, *down};
}

Result<std::string> kedaReactive(const Reactive &r, const ManifestTarget &t, const std::string &what)
{
    auto in = reactiveInputs(r, t);
    if (!in)
        return in.status();
    // KEDA hands HPA an External metric: AverageValue divides the query by
    // the replicas (a fleet total per replica, as the policy does); a mean
    // (KV usage) is compared as it is, Value: desired = ceil(n × value / target).
    const bool mean = r.metric == ScaleMetric::KvUsage;
    std::ostringstream out;
    header(out, t, what);
    out << r.note;
    toleranceNote(out, r.tolerance);
    out << "# " << in->series << " is " << t.server << "'s series for the " << scaleMetricName(r.metric)
        << " metric; "
        << (mean ? "its mean over the replicas is compared with the target (Value)"
                 : "the fleet's total is divided by the replicas (AverageValue)")
        << ".\n# pollingInterval is how often KEDA reads the trigger (and scales from or to zero); HPA "
           "syncs every 15 s by default.\n"
        << "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\n";
    metadata(out, t);
    out << "spec:\n";
    scaleTargetRef(out, t, "  ");
    out << "  pollingInterval: " << std::max(1L, std::lround(t.periodS)) << "\n"
        << "  minReplicaCount: " << r.bounds.minReplicas << "\n"
        << "  maxReplicaCount: " << r.bounds.maxReplicas << "\n"
        << "  advanced:\n    horizontalPodAutoscalerConfig:\n";
    behavior(out, in->upS, in->downS, "      ");
    out << "  triggers:\n"
        << "    - type: prometheus\n"
        << "      metricType: " << (mean ? "Value" : "AverageValue") << "\n"
        << "      metadata:\n"
        << "        serverAddress: " << t.prometheus << "\n"
        << "        query: '" << promQuery(r, in->series, t) << "'\n"
        << "        threshold: \"" << num(r.target) << "\"\n";
    return out.str();
}

Result<std::string> hpaReactive(const Reactive &r, const ManifestTarget &t, const std::string &what)
{
    auto in = reactiveInputs(r, t);
    if (!in)
        return in.status();
    // prometheus-adapter's default rules expose a gauge under its own name and
    // a counter ending in _total as its rate without the suffix; the rule is
    // spelled out so that the name does not depend on the adapter's defaults.
    const bool rate = r.metric == ScaleMetric::RequestRate;
    std::string name = in->series;
    if (rate)
        name = name.ends_with("_total") ? name.substr(0, name.size() - 6) : name + "_rate";
    const std::string metricsQuery = rate ? "sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)"
                                          : std::string(r.metric == ScaleMetric::KvUsage ? "avg" : "sum") +
                                                "(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)";
    std::ostringstream out;
    header(out, t, what);
    out << r.note;
    toleranceNote(out, r.tolerance);
    out << "# The metric is a Pods metric from the custom metrics API: " << name << " as prometheus-adapter\n"
        << "# exposes " << in->series << " (" << t.server << "'s series for " << scaleMetricName(r.metric)
        << ") with this rule:\n"
        << "#   - seriesQuery: '" << in->series << "{namespace!=\"\",pod!=\"\"}'\n"
        << "#     resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}\n"
        << "#     name: {matches: \"^" << in->series << "$\", as: \"" << name << "\"}\n"
        << "#     metricsQuery: '" << metricsQuery << "'\n"
        << "# HPA averages it over the pods and compares it with the target (AverageValue).\n";
    int minReplicas = r.bounds.minReplicas;
    if (minReplicas < 1) {
        out << "# minReplicas 0 needs HPA's alpha HPAScaleToZero gate and an Object or External metric: 1 "
               "here (KEDA scales to zero).\n";
        minReplicas = 1;
    }
    out << "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n";
    metadata(out, t);
    out << "spec:\n";
    scaleTargetRef(out, t, "  ");
    out << "  minReplicas: " << minReplicas << "\n"
        << "  maxReplicas: " << r.bounds.maxReplicas << "\n"
        << "  metrics:\n"
        << "    - type: Pods\n"
        << "      pods:\n"
        << "        metric:\n"
        << "          name: " << name << "\n"
        << "        target:\n"
        << "          type: AverageValue\n"
        << "          averageValue: \"" << quantity(r.target) << "\"\n";
    behavior(out, in->upS, in->downS, "  ");
    return out.str();
}

Result<std::string> kedaScheduled(const ScheduledKnobs &k, const ManifestTarget &t, const std::string &what)
{
    auto runs = cronRuns(k);
    if (!runs)
        return runs.status();
    int least = k.bounds.maxReplicas, most = 0;
    for (int r : k.replicas) {
        const int n = std::clamp(r, k.bounds.minReplicas, k.bounds.maxReplicas);
        least = std::min(least, n);
        most = std::max(most, n);
    }
    std::ostringstream out;
    header(out, t, what);
    out << "# One cron trigger per run of equal slots (slot 0 begins at midnight, " << t.timezone
        << "), each asked " << num(k.leadS)
        << " s early\n# so that a cold start ends before the slot begins; outside every run KEDA keeps "
           "minReplicaCount.\n"
        << "apiVersion: keda.sh/v1alpha1\nkind: ScaledObject\n";
    metadata(out, t);
    out << "spec:\n";
    scaleTargetRef(out, t, "  ");
    out << "  pollingInterval: " << std::max(1L, std::lround(t.periodS)) << "\n"
        << "  minReplicaCount: " << least << "\n"
        << "  maxReplicaCount: " << std::max(1, most) << "\n"
        << "  triggers:\n";
    for (const CronRun &run : *runs)
        out << "    - type: cron\n"
            << "      metadata:\n"
            << "        timezone: " << t.timezone << "\n"
            << "        start: \"" << cronAt(run.startMinute) << "\"\n"
            << "        end: \"" << cronAt(run.endMinute) << "\"\n"
            << "        desiredReplicas: \"" << run.replicas << "\"\n";
    return out.str();
}

Reactive fromPredictive(const PredictiveKnobs &k)
{
    Reactive r;
    r.metric = ScaleMetric::RequestRate;
    r.target = k.replicaRate / k.headroom;
    r.upS = 0;
    r.downS = k.downWindowS;
    r.bounds = k.bounds;
    r.note = "# The predictive policy (Holt's forecast of the arrival rate " + num(k.horizonS) +
             " s ahead) is not expressible here:\n# neither KEDA nor HPA has a forecaster. Exported instead: "
             "the reactive policy on the\n# request rate, " +
             num(r.target) + " req/s per replica (replica rate " + num(k.replicaRate) + " / headroom " +
             num(k.headroom) + "), which follows the load a period late.\n";
    return r;
}

} // namespace

Result<std::string> serverSeries(std::string_view server, ScaleMetric metric)
{
    for (const ServerSeries &s : kServers) {
        if (s.server != server)
            continue;
        std::string_view name;
        switch (metric) {
        case ScaleMetric::QueueDepth: name = s.queue; break;
        case ScaleMetric::RunningSequences: name = s.running; break;
        case ScaleMetric::KvUsage: name = s.kv; break;
        case ScaleMetric::RequestRate: name = s.requests; break;
        }
        if (name.empty())
            return invalid(std::string(server) + " exports no series for the " +
                           std::string(scaleMetricName(metric)) + " metric");
        return std::string(name);
    }
    return invalid("server '" + std::string(server) + "' is not one of " + std::string(kManifestServers));
}

std::string cronAt(int minuteOfDay)
{
    const int m = ((minuteOfDay % kDayMinutes) + kDayMinutes) % kDayMinutes;
    return std::to_string(m % 60) + " " + std::to_string(m / 60) + " * * *";
}

Result<std::vector<CronRun>> cronRuns(const ScheduledKnobs &k)
{
    if (Status s = validate(k); !s)
        return s;
    const double cycleS = k.slotS * double(k.replicas.size());
    const double slotMin = k.slotS / 60;
    if (slotMin != std::floor(slotMin) || std::fmod(86400.0, cycleS) != 0)
        return invalid("a schedule of " + std::to_string(k.replicas.size()) + " slots of " + num(k.slotS) +
                       " s does not divide a day into whole minutes: KEDA's cron triggers repeat daily");
    const int slots = int(86400.0 / k.slotS), step = int(slotMin);
    const int lead = int(std::ceil(k.leadS / 60 - 1e-9));
    std::vector<CronRun> runs;
    for (int i = 0; i < slots;) {
        const auto at = [&](int j) {
            return std::clamp(k.replicas[std::size_t(j) % k.replicas.size()], k.bounds.minReplicas,
                              k.bounds.maxReplicas);
        };
        int j = i + 1;
        while (j < slots && at(j) == at(i))
            ++j;
        if (at(i) > 0) {
            if (i == 0 && j == slots) { // the whole day: two halves
                runs.push_back({-lead, kDayMinutes / 2 - lead, at(i)});
                runs.push_back({kDayMinutes / 2 - lead, kDayMinutes - lead, at(i)});
            } else {
                runs.push_back({i * step - lead, j * step - lead, at(i)});
            }
        }
        i = j;
    }
    if (runs.empty())
        return invalid("the schedule asks for no replica at any time: nothing for a cron trigger to do");
    for (CronRun &r : runs) {
        r.startMinute = ((r.startMinute % kDayMinutes) + kDayMinutes) % kDayMinutes;
        r.endMinute = ((r.endMinute % kDayMinutes) + kDayMinutes) % kDayMinutes;
    }
    return runs;
}

Result<std::string> exportAutoscaler(const AutoscaleKnobs &knobs, std::string_view format,
                                     const ManifestTarget &target)
{
    if (format != "keda" && format != "hpa")
        return invalid("unknown autoscaler export format '" + std::string(format) + "' (" +
                       std::string(kAutoscaleExportFormats) + ")");
    if (Status s = checkTarget(target); !s)
        return s;
    const bool keda = format == "keda";
    const std::string kind = keda ? "KEDA ScaledObject" : "Kubernetes HorizontalPodAutoscaler";
    if (const auto *k = std::get_if<ReactiveKnobs>(&knobs)) {
        if (Status s = validate(*k); !s)
            return s;
        const Reactive r{k->metric, k->target, k->tolerance, k->upWindowS, k->downWindowS, k->bounds, ""};
        const std::string what = kind + ": " + ReactivePolicy(*k).describe();
        return keda ? kedaReactive(r, target, what) : hpaReactive(r, target, what);
    }
    if (const auto *k = std::get_if<PredictiveKnobs>(&knobs)) {
        if (Status s = validate(*k); !s)
            return s;
        const std::string what = kind + ": " + PredictivePolicy(*k).describe();
        return keda ? kedaReactive(fromPredictive(*k), target, what)
                    : hpaReactive(fromPredictive(*k), target, what);
    }
    const auto &k = std::get<ScheduledKnobs>(knobs);
    if (!keda)
        return invalid("an HPA has no schedule: export the scheduled policy with --export keda (KEDA's cron "
                       "triggers)");
    return kedaScheduled(k, target, kind + ": " + ScheduledPolicy(k).describe());
}

} // namespace bp
