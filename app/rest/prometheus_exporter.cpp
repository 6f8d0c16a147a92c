#include "prometheus_exporter.h"

#include "engine/config/knobs.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace bp::rest {

namespace {

// Upper bounds of the latency buckets, seconds: 50 µs .. 30 s.
constexpr std::array<double, 18> kSecondsBounds = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                   0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                                   0.5,     1,      2.5,     5,      10,    30};
constexpr std::array<int, 11> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};

std::string num(double v)
{
    if (std::isnan(v))
        return "NaN";
    if (std::isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, v);
    return std::string(buffer, result.ptr);
}

// Bucket bounds as Go's client formats them ('g'): "5e-05", "0.0001", "2.5".
std::string label(double v)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%g", v);
    return buffer;
}

std::string num(std::uint64_t v)
{
    return std::to_string(v);
}

// Label values here are our own names and model names: escape \ " and newline.
std::string escape(const std::string &value)
{
    std::string out;
    out.reserve(value.size());
    for (char c : value) {
        if (c == '\\' || c == '"')
            out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

class Writer {
public:
    void family(const char *name, const char *type, const char *help)
    {
        m_out += "# HELP ";
        m_out += name;
        m_out += ' ';
        m_out += help;
        m_out += "\n# TYPE ";
        m_out += name;
        m_out += ' ';
        m_out += type;
        m_out += '\n';
    }
    void sample(const std::string &name, const std::string &labels, const std::string &value)
    {
        m_out += name;
        if (!labels.empty()) {
            m_out += '{';
            m_out += labels;
            m_out += '}';
        }
        m_out += ' ';
        m_out += value;
        m_out += '\n';
    }
    void gauge(const char *name, const char *help, double value)
    {
        family(name, "gauge", help);
        sample(name, {}, num(value));
    }
    void counter(const char *name, const char *help, std::uint64_t value)
    {
        family(name, "counter", help);
        sample(name, {}, num(value));
    }
    void latencyHistogram(const char *name, const char *help, const LatencyHistogram &h)
    {
        family(name, "histogram", help);
        const std::string base = name;
        for (double bound : kSecondsBounds)
            sample(base + "_bucket", "le=\"" + label(bound) + "\"",
                   num(h.countAtOrBelow(std::int64_t(std::llround(bound * 1e9)))));
        sample(base + "_bucket", "le=\"+Inf\"", num(h.count()));
        sample(base + "_sum", {}, num(h.mean() * double(h.count()) / 1e9));
        sample(base + "_count", {}, num(h.count()));
    }
    std::string take() { return std::move(m_out); }

private:
    std::string m_out;
};

} // namespace

const char *prometheusContentType()
{
    return "text/plain; version=0.0.4; charset=utf-8";
}

namespace {

// The process, its requests and their latency.
void writeRequests(Writer &w, const ExporterInput &in)
{
    const Snapshot &s = *in.snapshot;
    w.family("batchpilot_build_info", "gauge", "Version, model and device of this process (always 1).");
    w.sample("batchpilot_build_info",
             "version=\"" + escape(in.version) + "\",model=\"" + escape(s.modelName) + "\",device=\"" +
                 escape(s.device) + "\"",
             "1");
    w.gauge("batchpilot_uptime_seconds", "Seconds since the engine started.", s.uptimeS);

    w.family(
        "batchpilot_requests_total", "counter",
        "Requests by final engine status (ok, queue_full, deadline_exceeded, ...), rejections included.");
    for (int c = 0; c < kStatusCodeCount; ++c)
        w.sample("batchpilot_requests_total", "status=\"" + std::string(statusCodeName(StatusCode(c))) + "\"",
                 num(s.byStatus[std::size_t(c)]));
    w.counter("batchpilot_requests_accepted_total", "Requests admitted into the queue.", s.submitted);
    w.counter("batchpilot_batches_total", "Batches executed.", s.batches);
    w.counter("batchpilot_input_tokens_total", "Input tokens of completed requests.", s.inputTokens);
    w.counter("batchpilot_output_tokens_total", "Output tokens of completed requests.", s.outputTokens);

    w.latencyHistogram("batchpilot_request_duration_seconds",
                       "Request latency from arrival to completion (completed requests).", s.totalHist);
    w.latencyHistogram("batchpilot_queue_wait_seconds",
                       "Time from arrival until the request's batch was dispatched.", s.queueWaitHist);
    w.latencyHistogram("batchpilot_compute_seconds", "Execution time of the batch each request ran in.",
                       s.computeHist);
}

// Generation: token-level latency, the continuous scheduler, prefix caching, goodput.
void writeGeneration(Writer &w, const Snapshot &s)
{
    w.latencyHistogram("batchpilot_time_to_first_token_seconds",
                       "Time from arrival to the first generated token (completed generative requests).",
                       s.ttftHist);
    w.latencyHistogram("batchpilot_time_per_output_token_seconds",
                       "Per request with 2+ tokens: (last token - first token) / (tokens - 1).", s.tpotHist);
    w.latencyHistogram("batchpilot_inter_token_latency_seconds",
                       "Every gap between consecutive generated tokens (request-level policies: each gap is "
                       "the request's time per output token).",
                       s.itlHist);
    w.gauge("batchpilot_running_sequences", "Sequences in the running set (policy continuous).",
            double(s.runningSequences));
    w.gauge("batchpilot_waiting_sequences", "Sequences waiting to join the running set (policy continuous).",
            double(s.waitingSequences));
    w.gauge("batchpilot_kv_cache_tokens", "Tokens held in KV caches (policy continuous).",
            double(s.kvTokens));
    w.gauge("batchpilot_kv_cache_usage_ratio",
            "KV-cache tokens / continuous.kv_cache_tokens (0 when the budget is unlimited).", s.kvUsageRatio);
    w.gauge("batchpilot_tokens_per_step",
            "Mean prompt + decode tokens per generation step over the last window.", s.tokensPerStep);
    w.counter("batchpilot_steps_total", "Generation steps executed (policy continuous).", s.steps);
    w.counter("batchpilot_step_tokens_total", "Prompt and decode tokens fed in generation steps.",
              s.stepTokens);
    w.counter("batchpilot_preemptions_total",
              "Sequences preempted (recompute) because the KV-cache budget ran out.", s.preemptions);
    // Prefix caching (prefix_cache.enabled): named as vLLM's prefix_cache_queries/hits, in tokens.
    w.counter("batchpilot_prefix_cache_queries_tokens_total",
              "Context tokens looked up in the KV prefix cache when sequences joined.",
              s.prefixCacheQueriesTokens);
    w.counter("batchpilot_prefix_cache_hits_tokens_total",
              "Of those, tokens found cached (they skipped prefill).", s.prefixCacheHitsTokens);
    w.gauge("batchpilot_prefix_cache_hit_rate",
            "Prefix-cache hits / queries, in tokens, over the last window (0 without queries).",
            s.prefixCacheHitRate);
    w.gauge("batchpilot_prefix_cache_tokens",
            "Tokens of batchpilot_kv_cache_tokens held in prefix-cache blocks.", double(s.prefixCacheTokens));
    w.counter(
        "batchpilot_goodput_requests_total",
        "Requests completed OK within every set goodput SLO (goodput.ttft/tpot/e2e; all when none is set).",
        s.goodCompleted);
}

// Requests per executed batch, as a histogram.
void writeBatchSizes(Writer &w, const Snapshot &s)
{
    w.family("batchpilot_batch_size", "histogram", "Requests per executed batch.");
    {
        std::uint64_t cumulative = 0, total = 0, sum = 0;
        for (std::size_t i = 1; i < s.batchSizeCounts.size(); ++i) {
            total += s.batchSizeCounts[i];
            sum += s.batchSizeCounts[i] * i;
        }
        std::size_t next = 1;
        for (int bound : kBatchBounds) {
            for (; next < s.batchSizeCounts.size() && next <= std::size_t(bound); ++next)
                cumulative += s.batchSizeCounts[next];
            w.sample("batchpilot_batch_size_bucket", "le=\"" + std::to_string(bound) + "\"", num(cumulative));
        }
        w.sample("batchpilot_batch_size_bucket", "le=\"+Inf\"", num(total));
        w.sample("batchpilot_batch_size_sum", {}, num(sum));
        w.sample("batchpilot_batch_size_count", {}, num(total));
    }
}

// The queues, the arrival rate, padding and utilization.
void writeQueues(Writer &w, const Snapshot &s)
{
    w.gauge("batchpilot_queue_depth", "Requests waiting in the admission queue.", double(s.queueDepth));
    w.family("batchpilot_bucket_queue_depth", "gauge",
             "Requests waiting per queue (length bucket, or hybrid layer).");
    if (!s.queues.empty()) {
        for (std::size_t b = 0; b < s.queues.size(); ++b)
            w.sample("batchpilot_bucket_queue_depth",
                     "bucket=\"" + std::to_string(b) + "\",queue=\"" + escape(s.queues[b].name) + "\"",
                     num(double(s.queues[b].depth)));
    } else {
        for (std::size_t b = 0; b < s.queueDepths.size(); ++b)
            w.sample("batchpilot_bucket_queue_depth", "bucket=\"" + std::to_string(b) + "\"",
                     num(double(s.queueDepths[b])));
    }
    w.gauge("batchpilot_arrival_rate_requests_per_second", "Smoothed request arrival rate.", s.arrivalRate);
    w.gauge("batchpilot_effective_queue_delay_seconds",
            "The queue delay in force: the adaptive delay when it is on, else max_queue_delay.",
            std::chrono::duration<double>(s.effectiveDelay).count());
    w.gauge("batchpilot_batches_in_flight", "Batches formed and not yet finished.",
            double(s.inFlightBatches));
    w.gauge("batchpilot_padding_efficiency_ratio",
            "Real tokens / padded tokens over the last window (1 = no padding).", s.paddingEfficiency);
    w.gauge("batchpilot_padding_efficiency_lifetime_ratio", "Real tokens / padded tokens since start.",
            s.paddingEfficiencyAll);
    w.gauge("batchpilot_utilization_ratio", "Busy fraction of the model instances over the last window.",
            s.busyFraction);
    // `model_instance`, not `instance`: Prometheus sets `instance` to the scrape target.
    w.family("batchpilot_instance_utilization_ratio", "gauge",
             "Busy fraction of each model instance over the last window.");
    for (std::size_t i = 0; i < s.instanceBusy.size(); ++i)
        w.sample("batchpilot_instance_utilization_ratio", "model_instance=\"" + std::to_string(i) + "\"",
                 num(s.instanceBusy[i]));
    w.gauge("batchpilot_window_seconds", "Length of the window the *_ratio gauges cover.", s.windowS);
}

// The config in force: the policy one-hot and one gauge per knob.
void writeConfig(Writer &w, const Snapshot &s)
{
    const BatchingConfig &c = s.config;
    w.family("batchpilot_config_policy", "gauge", "The active batching policy (1) among all policies (0).");
    for (PolicyKind p : {PolicyKind::None, PolicyKind::Static, PolicyKind::Dynamic, PolicyKind::Bucketed,
                         PolicyKind::Hybrid, PolicyKind::Continuous})
        w.sample("batchpilot_config_policy", "policy=\"" + std::string(policyName(p)) + "\"",
                 c.policy == p ? "1" : "0");
    w.gauge("batchpilot_config_version", "Config version: 1 at start, +1 per change.",
            double(s.configVersion));
    // One gauge per knob, named and documented by the knob table (engine/config/knobs.h).
    for (const Knob &k : knobs()) {
        if (k.type == KnobType::Policy)
            continue; // the one-hot family above
        const std::string name = knobGaugeName(k);
        const std::string help = "Knob " + std::string(k.key) + " (" + knobPolicies(k) +
                                 "): " + std::string(k.doc) +
                                 (k.type == KnobType::Duration ? "; seconds." : ".");
        if (k.type == KnobType::IntList) {
            w.family(name.c_str(), "gauge", help.c_str());
            const std::vector<int> &items = k.items(c);
            for (std::size_t i = 0; i < items.size(); ++i)
                w.sample(name, std::string(k.itemLabel) + "=\"" + std::to_string(i) + "\"",
                         num(double(items[i])));
        } else {
            w.gauge(name.c_str(), help.c_str(), knobGaugeValue(k, c));
        }
    }
}

// The response cache, the trace writer and the HTTP server.
void writeServing(Writer &w, const ExporterInput &in)
{
    const Snapshot &s = *in.snapshot;
    w.counter("batchpilot_cache_hits_total", "Requests answered from the response cache.", s.cache.hits);
    w.counter("batchpilot_cache_misses_total", "Cache look-ups that missed.", s.cache.misses);
    w.counter("batchpilot_cache_evictions_total", "Entries evicted from the response cache.",
              s.cache.evictions);
    w.gauge("batchpilot_cache_entries", "Entries in the response cache.", double(s.cache.entries));
    w.gauge("batchpilot_cache_bytes", "Bytes held by the response cache.", double(s.cache.bytes));

    w.counter("batchpilot_trace_dropped_rows_total",
              in.traceSinkAttached
                  ? "Trace rows dropped because the SQLite writer fell behind."
                  : "Trace rows dropped because the SQLite writer fell behind (no trace sink attached).",
              in.droppedTraceRows);

    w.family("batchpilot_http_responses_total", "counter", "HTTP responses by status code.");
    for (const auto &[code, count] : in.http.responsesByCode)
        w.sample("batchpilot_http_responses_total", "code=\"" + std::to_string(code) + "\"", num(count));
    w.gauge("batchpilot_http_requests_in_flight", "HTTP requests waiting for the engine.",
            double(in.http.callsInFlight));
    w.gauge("batchpilot_http_connections", "Open HTTP client connections.", double(in.http.connections));
    w.gauge("batchpilot_http_requests_waiting",
            "HTTP inference requests waiting for room in the full admission queue.", double(in.http.waiting));
}

// NVML, sampled once a second on the server thread (gpu_gauges.h); ratios
// as the other *_ratio gauges, 0..1.
void writeGpu(Writer &w, const ExporterInput &in)
{
    if (const GpuReading *g = in.gpu) {
        const std::string labels =
            "gpu=\"" + std::to_string(g->index) + "\",name=\"" + escape(g->name) + "\"";
        auto gpuGauge = [&](const char *name, const char *help, const std::string &value) {
            w.family(name, "gauge", help);
            w.sample(name, labels, value);
        };
        gpuGauge("batchpilot_gpu_utilization_ratio",
                 "Fraction of NVML's last sample period in which a kernel ran on the GPU.",
                 num(g->sample.gpuUtilPercent / 100.0));
        gpuGauge("batchpilot_gpu_memory_bandwidth_utilization_ratio",
                 "Fraction of NVML's last sample period in which device memory was read or written.",
                 num(g->sample.memoryUtilPercent / 100.0));
        gpuGauge("batchpilot_gpu_memory_used_bytes", "Device memory in use (all processes).",
                 num(std::uint64_t(g->sample.memoryUsedBytes)));
        gpuGauge("batchpilot_gpu_memory_total_bytes", "Device memory in total.",
                 num(std::uint64_t(g->sample.memoryTotalBytes)));
    }
}

} // namespace

std::string renderPrometheus(const ExporterInput &in)
{
    const Snapshot &s = *in.snapshot;
    Writer w;
    writeRequests(w, in);
    writeGeneration(w, s);
    writeBatchSizes(w, s);
    writeQueues(w, s);
    writeConfig(w, s);
    writeServing(w, in);
    writeGpu(w, in);
    return w.take();
}

} // namespace bp::rest
