#include "target_metrics.h"

namespace bp {

std::string detectServer(const prom::Exposition &e)
{
    if (e.hasPrefix("vllm:"))
        return "vllm";
    if (e.hasPrefix("sglang:"))
        return "sglang";
    if (e.hasPrefix("tgi_"))
        return "tgi";
    if (e.hasPrefix("nv_inference_") || e.hasPrefix("nv_trt_llm_"))
        return "triton";
    if (e.hasPrefix("batchpilot_"))
        return "batchpilot";
    if (e.hasPrefix("llamacpp:"))
        return "llamacpp";
    return {};
}

std::optional<double> requestsCounter(const prom::Exposition &e, std::string_view server)
{
    if (server == "vllm")
        return e.sum("vllm:request_success_total");
    if (server == "tgi")
        return e.sum("tgi_request_count");
    if (server == "sglang")
        return e.sum("sglang:num_requests_total");
    if (server == "batchpilot")
        return e.sum("batchpilot_requests_accepted_total");
    if (server == "triton") {
        const auto ok = e.sum("nv_inference_request_success"), failed = e.sum("nv_inference_request_failure");
        if (!ok && !failed)
            return std::nullopt;
        return ok.value_or(0) + failed.value_or(0);
    }
    return std::nullopt;
}

std::optional<double> TargetMetricsMapper::deltaRatio(const std::string &key, std::optional<double> numerator,
                                                      std::optional<double> denominator)
{
    if (!numerator || !denominator)
        return std::nullopt;
    auto previous = m_previous.find(key);
    std::optional<double> out;
    if (previous != m_previous.end()) {
        const double dn = *numerator - previous->second.first, dd = *denominator - previous->second.second;
        if (dd > 0 && dn >= 0)
            out = dn / dd;
    }
    m_previous[key] = {*numerator, *denominator};
    return out;
}

TargetSample TargetMetricsMapper::map(const prom::Exposition &e, Duration at)
{
    TargetSample t;
    t.at = at;
    t.server = detectServer(e);
    if (t.server == "vllm") {
        t.running = e.sum("vllm:num_requests_running");
        t.waiting = e.sum("vllm:num_requests_waiting");
        t.queue = t.waiting;
        t.batchSize = t.running; // iteration-level batching: the running set is the batch
        t.kvUsage = e.has("vllm:kv_cache_usage_perc") ? e.mean("vllm:kv_cache_usage_perc")
                                                      : e.mean("vllm:gpu_cache_usage_perc");
        t.tokensPerStep = deltaRatio("vllm:iteration_tokens_total", e.sum("vllm:iteration_tokens_total_sum"),
                                     e.sum("vllm:iteration_tokens_total_count"));
        // V1: counters in tokens (prometheus_client adds _total on the wire);
        // V0: a gauge of the block hit rate.
        if (e.has("vllm:prefix_cache_queries_total"))
            t.prefixCacheHitRate = deltaRatio("vllm:prefix_cache", e.sum("vllm:prefix_cache_hits_total"),
                                              e.sum("vllm:prefix_cache_queries_total"));
        else
            t.prefixCacheHitRate = e.mean("vllm:gpu_prefix_cache_hit_rate");
    } else if (t.server == "sglang") {
        t.running = e.sum("sglang:num_running_reqs");
        t.waiting = e.sum("sglang:num_queue_reqs");
        t.queue = t.waiting;
        t.batchSize = t.running;
        t.kvUsage = e.mean("sglang:token_usage");
        t.prefixCacheHitRate = e.mean("sglang:cache_hit_rate");
    } else if (t.server == "tgi") {
        t.batchSize = e.sum("tgi_batch_current_size");
        t.running = t.batchSize;
        t.queue = e.sum("tgi_queue_size");
        t.waiting = t.queue;
    } else if (t.server == "triton") {
        t.queue = e.sum("nv_inference_pending_request_count");
        t.batchSize =
            deltaRatio("nv_inference", e.sum("nv_inference_count"), e.sum("nv_inference_exec_count"));
        t.running = e.sum("nv_trt_llm_request_metrics", {{"request_type", "scheduled"}});
        t.waiting = e.sum("nv_trt_llm_request_metrics", {{"request_type", "waiting"}});
        if (!t.waiting)
            t.waiting = t.queue;
        t.kvUsage = e.sum("nv_trt_llm_kv_cache_block_metrics", {{"kv_cache_block_type", "fraction"}});
        if (!t.kvUsage) {
            auto used = e.sum("nv_trt_llm_kv_cache_block_metrics", {{"kv_cache_block_type", "used"}});
            auto max = e.sum("nv_trt_llm_kv_cache_block_metrics", {{"kv_cache_block_type", "max"}});
            if (used && max && *max > 0)
                t.kvUsage = *used / *max;
        }
    } else if (t.server == "llamacpp") {
        // llama-server (tools/server/server-task.cpp to_metrics): busy slots,
        // deferred tasks, llama_decode calls and the token counters.
        t.running = e.sum("llamacpp:requests_processing");
        t.waiting = e.sum("llamacpp:requests_deferred");
        t.queue = t.waiting;
        t.batchSize = t.running;
        std::optional<double> tokens;
        if (const auto prompt = e.sum("llamacpp:prompt_tokens_total"),
            predicted = e.sum("llamacpp:tokens_predicted_total");
            prompt || predicted)
            tokens = prompt.value_or(0) + predicted.value_or(0);
        t.tokensPerStep = deltaRatio("llamacpp:n_decode", tokens, e.sum("llamacpp:n_decode_total"));
    } else if (t.server == "batchpilot") {
        t.queue = e.sum("batchpilot_queue_depth");
        t.batchSize = deltaRatio("batchpilot_batch_size", e.sum("batchpilot_batch_size_sum"),
                                 e.sum("batchpilot_batch_size_count"));
        // The iteration-level gauges mean something under policy continuous
        // only (a request-level policy exports them as zeros): taken when the
        // server says that policy is active, or does not say which is.
        const bool continuous =
            e.has("batchpilot_config_policy")
                ? e.sum("batchpilot_config_policy", {{"policy", "continuous"}}).value_or(0) > 0
                : e.has("batchpilot_running_sequences");
        if (continuous) {
            t.running = e.sum("batchpilot_running_sequences");
            t.waiting = e.sum("batchpilot_waiting_sequences");
            // The ratio is 0 both when the cache is empty and when it has no
            // capacity (kv_cache_tokens unlimited): tokens held with a zero
            // ratio can only be the latter, which has no usage to report.
            const auto ratio = e.sum("batchpilot_kv_cache_usage_ratio");
            const auto tokens = e.sum("batchpilot_kv_cache_tokens");
            if (ratio && !(*ratio == 0 && tokens && *tokens > 0))
                t.kvUsage = ratio;
            // Tokens per step over the scrape interval from the counters;
            // the window-mean gauge only where the counters are not exported.
            if (e.has("batchpilot_step_tokens_total") && e.has("batchpilot_steps_total"))
                t.tokensPerStep = deltaRatio("batchpilot_steps", e.sum("batchpilot_step_tokens_total"),
                                             e.sum("batchpilot_steps_total"));
            else
                t.tokensPerStep = e.sum("batchpilot_tokens_per_step");
        }
        if (!t.waiting)
            t.waiting = t.queue;
    }
    return t;
}

} // namespace bp
