// clang-format off
// Maps a remote server's Prometheus /metrics to one set of series
// (TargetSample), whichever server it is. Each server names its batching
// figures differently; the table below is the whole mapping (documented,
// with the servers' own references, in docs/remote.md).
//
//   series           vLLM                            Triton (+ TensorRT-LLM backend)
//   batch_size       = running                       Δnv_inference_count / Δnv_inference_exec_count
//   queue            vllm:num_requests_waiting       nv_inference_pending_request_count
//   running          vllm:num_requests_running       nv_trt_llm_request_metrics{request_type="scheduled"}
//   waiting          vllm:num_requests_waiting       nv_trt_llm_request_metrics{request_type="waiting"}, else queue
//   kv_usage         vllm:kv_cache_usage_perc        nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"}
//                    (older: gpu_cache_usage_perc)   (else used / max)
//   tokens_per_step  Δvllm:iteration_tokens_total    —
//                    _sum / _count
//   prefix_cache_hit_rate  Δvllm:prefix_cache_hits_total / Δvllm:prefix_cache_queries_total
//                    (older: vllm:gpu_prefix_cache_hit_rate); SGLang: sglang:cache_hit_rate
//
//   series           TGI                     SGLang                  BatchPilot
//   batch_size       tgi_batch_current_size  = running               Δbatchpilot_batch_size_sum / Δ_count
//   queue            tgi_queue_size          sglang:num_queue_reqs   batchpilot_queue_depth
//   running          tgi_batch_current_size  sglang:num_running_reqs batchpilot_running_sequences (*)
//   waiting          tgi_queue_size          sglang:num_queue_reqs   batchpilot_waiting_sequences (*), else queue
//   kv_usage         —                       sglang:token_usage      batchpilot_kv_cache_usage_ratio (*, **)
//   tokens_per_step  —                       —                       Δbatchpilot_step_tokens_total / Δbatchpilot_steps_total (*)
//                                                                    (batchpilot_tokens_per_step without the counters)
//
//   series           llama.cpp (llama-server --metrics)
//   batch_size       = running
//   queue            llamacpp:requests_deferred
//   running          llamacpp:requests_processing
//   waiting          llamacpp:requests_deferred
//   tokens_per_step  Δ(llamacpp:prompt_tokens_total + llamacpp:tokens_predicted_total)
//                    / Δllamacpp:n_decode_total
//   (kv_usage: llama-server publishes none; n_tokens_max is the longest
//   sequence seen, not a usage)
//
//   (*)  only while batchpilot_config_policy{policy="continuous"} is 1 (or
//        the policy is not exported): request-level policies export zeros.
//   (**) not when it is 0 while batchpilot_kv_cache_tokens > 0: no KV
//        capacity is set (unlimited), so there is no usage ratio.
//
// Gauges are summed over label sets (several models, ranks or engines
// behind one endpoint), ratios (KV usage) averaged. Series computed from
// counters (Δ) compare this scrape with the previous one: empty on the
// first scrape, and when nothing ran in between (a batch size of "no
// batches" is not a number). A counter that went down (the server
// restarted) starts over from this scrape.
//
// Not thread-safe: one mapper per scraped target.
// clang-format on
#pragma once

#include "prometheus_text.h"
#include "target_sample.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace bp {

// "vllm", "triton", "tgi", "sglang", "batchpilot", "llamacpp", or "" when the
// exposition has none of their metrics.
std::string detectServer(const prom::Exposition &exposition);

// The server's counter of requests, for a request rate between two scrapes
// (an autoscaler's `rate` metric): vLLM vllm:request_success_total
// (finished requests: vLLM counts no arrivals), TGI tgi_request_count
// (received), SGLang sglang:num_requests_total (finished), Triton
// nv_inference_request_success + nv_inference_request_failure (finished),
// BatchPilot batchpilot_requests_accepted_total (admitted). nullopt when the
// exposition has none.
std::optional<double> requestsCounter(const prom::Exposition &exposition, std::string_view server);

class TargetMetricsMapper {
public:
    TargetSample map(const prom::Exposition &exposition, Duration at);

private:
    // Δnumerator / Δdenominator against the previous scrape's values.
    std::optional<double> deltaRatio(const std::string &key, std::optional<double> numerator,
                                     std::optional<double> denominator);
    std::map<std::string, std::pair<double, double>> m_previous; // key -> (numerator, denominator)
};

} // namespace bp
