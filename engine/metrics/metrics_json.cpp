#include "engine/metrics/metrics_json.h"

#include "engine/config/config_json.h"

namespace bp {

using nlohmann::json;

json toJson(const LatencySummary &s)
{
    return json{{"count", s.count},  {"mean_us", s.meanUs}, {"p50_us", s.p50Us}, {"p90_us", s.p90Us},
                {"p99_us", s.p99Us}, {"p999_us", s.p999Us}, {"max_us", s.maxUs}};
}

json toJson(const BatchRecord &b)
{
    return json{{"id", b.id},
                {"size", b.size},
                {"padded_length", b.paddedLength},
                {"real_tokens", b.realTokens},
                {"padded_tokens", b.paddedTokens},
                {"compute_us", toMicros(b.compute)},
                {"reason", std::string(dispatchReasonName(b.reason))},
                {"policy", std::string(policyName(b.policy))},
                {"bucket", b.bucket},
                {"instance", b.executor},
                {"config_version", b.configVersion},
                {"status", std::string(statusCodeName(b.status))},
                // policy continuous: one record per step (zeros otherwise)
                {"prefill_tokens", b.prefillTokens},
                {"decode_tokens", b.decodeTokens},
                {"joined", b.joined},
                {"running", b.running},
                {"waiting", b.waiting},
                {"kv_tokens", b.kvTokens},
                {"preempted", b.preempted}};
}

json toJson(const Snapshot &s)
{
    json byStatus = json::object();
    for (int i = 0; i < kStatusCodeCount; ++i)
        if (s.byStatus[std::size_t(i)])
            byStatus[std::string(statusCodeName(StatusCode(i)))] = s.byStatus[std::size_t(i)];
    json history = json::array();
    for (const ConfigChange &c : s.configHistory)
        history.push_back({{"version", c.version},
                           {"at_s", toSeconds(c.at - s.takenAt) + s.uptimeS},
                           {"summary", c.summary},
                           {"origin", c.origin}});
    return json{
        {"model", s.modelName},
        {"device", s.device},
        {"uptime_s", s.uptimeS},
        {"config_version", s.configVersion},
        {"config", toJson(s.config)},
        {"submitted", s.submitted},
        {"completed", s.completed},
        {"by_status", byStatus},
        {"batches", s.batches},
        {"input_tokens", s.inputTokens},
        {"output_tokens", s.outputTokens},
        {"queue_depth", s.queueDepth},
        {"queue_depths", s.queueDepths},
        {"in_flight_batches", s.inFlightBatches},
        // policy continuous (zeros under the request-level policies)
        {"running_sequences", s.runningSequences},
        {"waiting_sequences", s.waitingSequences},
        {"kv_tokens", s.kvTokens},
        {"kv_capacity_tokens", s.kvCapacityTokens},
        {"kv_usage_ratio", s.kvUsageRatio},
        {"prefix_cache_tokens", s.prefixCacheTokens},
        {"window",
         {{"seconds", s.windowS},
          {"requests_per_s", s.requestsPerS},
          {"input_tokens_per_s", s.inputTokensPerS},
          {"output_tokens_per_s", s.outputTokensPerS},
          {"latency_total", toJson(s.total)},
          {"latency_queue_wait", toJson(s.queueWait)},
          {"latency_compute", toJson(s.compute)},
          {"time_to_first_token", toJson(s.timeToFirstToken)},
          {"time_per_output_token", toJson(s.timePerOutputToken)},
          {"inter_token_latency", toJson(s.interTokenLatency)},
          {"goodput_per_s", s.goodputPerS},
          {"tokens_per_step", s.tokensPerStep},
          {"prefix_cache_hit_rate", s.prefixCacheHitRate},
          {"mean_batch_size", s.meanBatchSize},
          {"padding_efficiency", s.paddingEfficiency},
          {"busy_fraction", s.busyFraction},
          {"instance_busy", s.instanceBusy}}},
        {"cumulative",
         {{"latency_total", toJson(s.totalAll)},
          {"latency_queue_wait", toJson(s.queueWaitAll)},
          {"latency_compute", toJson(s.computeAll)},
          {"time_to_first_token", toJson(s.timeToFirstTokenAll)},
          {"time_per_output_token", toJson(s.timePerOutputTokenAll)},
          {"inter_token_latency", toJson(s.interTokenLatencyAll)},
          {"good_completed", s.goodCompleted},
          {"steps", s.steps},
          {"step_tokens", s.stepTokens},
          {"preemptions", s.preemptions},
          {"prefix_cache_queries_tokens", s.prefixCacheQueriesTokens},
          {"prefix_cache_hits_tokens", s.prefixCacheHitsTokens},
          {"prefix_cache_hit_rate", s.prefixCacheHitRateAll},
          {"mean_batch_size", s.meanBatchSizeAll},
          {"padding_efficiency", s.paddingEfficiencyAll}}},
        {"config_history", history},
    };
}

} // namespace bp
