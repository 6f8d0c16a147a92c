// TargetSample: one scrape of a remote server's /metrics in BatchPilot's
// series. Written by the remote target's scraper, stored by the trace store
// (target_samples), drawn by the console.
#pragma once

#include "engine/core/clock.h"

#include <optional>
#include <string>

namespace bp {

// One scrape of a remote target's Prometheus /metrics, mapped from the
// server's own names (vllm:*, nv_inference_*, tgi_*, sglang:*,
// batchpilot_*) to one set of series (engine/telemetry/target_metrics.h says
// which name feeds which series). nullopt: the server does not expose it
// (or, for a rate, this was the first scrape). A failed scrape is a sample
// with `error` set and every series empty.
struct TargetSample {
    Duration at{};      // offset from the session's start
    std::string server; // "vllm", "triton", "tgi", "sglang", "batchpilot", "llamacpp"; empty when unknown
    std::optional<double> batchSize;     // sequences per batch / step
    std::optional<double> queue;         // requests queued in the server
    std::optional<double> running;       // sequences running
    std::optional<double> waiting;       // sequences waiting for a slot
    std::optional<double> kvUsage;       // KV cache in use, 0..1
    std::optional<double> tokensPerStep; // tokens per engine step
    // Prompt tokens served from the server's prefix cache, 0..1: vLLM
    // Δvllm:prefix_cache_hits / Δvllm:prefix_cache_queries (older:
    // vllm:gpu_prefix_cache_hit_rate), SGLang sglang:cache_hit_rate.
    std::optional<double> prefixCacheHitRate;
    std::string error;

    bool operator==(const TargetSample &) const = default;
};

} // namespace bp
