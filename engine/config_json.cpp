#include "config_json.h"

#include <fstream>
#include <sstream>

namespace bp {

using nlohmann::json;

json toJson(const BatchingConfig &c)
{
    return json{
        {"policy", std::string(policyName(c.policy))},
        {"max_batch_size", c.maxBatchSize},
        {"max_queue_delay_us", std::chrono::duration_cast<std::chrono::microseconds>(c.maxQueueDelay).count()},
        {"static_batch_size", c.staticBatchSize},
        {"static_padded_length", c.staticPaddedLength},
        {"static_flush_on_drain", c.staticFlushOnDrain},
        {"bucket_edges", c.bucketEdges},
        {"queue_capacity", c.queueCapacity},
        {"instances", c.instances},
    };
}

namespace {

Status typeError(const std::string &field, const char *expected, const json &value)
{
    return {StatusCode::InvalidArgument,
            "field '" + field + "' must be " + expected + ", got " + std::string(value.type_name())};
}

Status readInt(const json &j, const std::string &field, long long lo, long long hi, long long &out)
{
    if (!j.is_number_integer())
        return typeError(field, "an integer", j);
    const long long v = j.get<long long>();
    if (v < lo || v > hi)
        return {StatusCode::InvalidArgument, "field '" + field + "' = " + std::to_string(v) +
                                                 " is outside [" + std::to_string(lo) + ", " +
                                                 std::to_string(hi) + "]"};
    out = v;
    return Status::ok();
}

} // namespace

Result<BatchingConfig> configFromJson(const json &j, const BatchingConfig &base)
{
    if (!j.is_object())
        return Status(StatusCode::InvalidArgument, "config must be a JSON object");
    BatchingConfig c = base;
    constexpr long long kIntMax = 1'000'000'000;
    for (const auto &[key, value] : j.items()) {
        long long v = 0;
        Status s;
        if (key == "policy") {
            if (!value.is_string())
                return typeError(key, "a string", value);
            auto p = parsePolicy(value.get<std::string>());
            if (!p)
                return Status(StatusCode::InvalidArgument, "unknown policy '" + value.get<std::string>() +
                                                               "' (none, static, dynamic, bucketed)");
            c.policy = *p;
        } else if (key == "max_batch_size") {
            if (!(s = readInt(value, key, -kIntMax, kIntMax, v)))
                return s;
            c.maxBatchSize = int(v);
        } else if (key == "max_queue_delay_us") {
            if (!(s = readInt(value, key, -kIntMax, kIntMax * 1000, v)))
                return s;
            c.maxQueueDelay = std::chrono::microseconds(v);
        } else if (key == "static_batch_size") {
            if (!(s = readInt(value, key, -kIntMax, kIntMax, v)))
                return s;
            c.staticBatchSize = int(v);
        } else if (key == "static_padded_length") {
            if (!(s = readInt(value, key, -kIntMax, kIntMax, v)))
                return s;
            c.staticPaddedLength = int(v);
        } else if (key == "static_flush_on_drain") {
            if (!value.is_boolean())
                return typeError(key, "a boolean", value);
            c.staticFlushOnDrain = value.get<bool>();
        } else if (key == "bucket_edges") {
            if (!value.is_array())
                return typeError(key, "an array of integers", value);
            std::vector<int> edges;
            for (const auto &e : value) {
                if (!(s = readInt(e, key + "[]", -kIntMax, kIntMax, v)))
                    return s;
                edges.push_back(int(v));
            }
            c.bucketEdges = std::move(edges);
        } else if (key == "queue_capacity") {
            if (!(s = readInt(value, key, -kIntMax, kIntMax, v)))
                return s;
            c.queueCapacity = int(v);
        } else if (key == "instances") {
            if (!(s = readInt(value, key, -kIntMax, kIntMax, v)))
                return s;
            c.instances = int(v);
        } else {
            return Status(StatusCode::InvalidArgument, "unknown config field '" + key + "'");
        }
    }
    if (Status s = validate(c); !s)
        return s;
    return c;
}

Result<BatchingConfig> loadConfigFile(const std::string &path, const BatchingConfig &base)
{
    std::ifstream in(path);
    if (!in)
        return Status(StatusCode::NotFound, "cannot read config file '" + path + "'");
    std::stringstream buffer;
    buffer << in.rdbuf();
    json j = json::parse(buffer.str(), nullptr, false);
    if (j.is_discarded())
        return Status(StatusCode::InvalidArgument, "config file '" + path + "' is not valid JSON");
    auto result = configFromJson(j, base);
    if (!result)
        return Status(result.status().code(), "config file '" + path + "': " + result.status().message());
    return result;
}

json toJson(const LatencySummary &s)
{
    return json{{"count", s.count}, {"mean_us", s.meanUs}, {"p50_us", s.p50Us},  {"p90_us", s.p90Us},
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
                {"executor", b.executor},
                {"config_version", b.configVersion},
                {"status", std::string(statusCodeName(b.status))}};
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
        {"window",
         {{"seconds", s.windowS},
          {"requests_per_s", s.requestsPerS},
          {"input_tokens_per_s", s.inputTokensPerS},
          {"output_tokens_per_s", s.outputTokensPerS},
          {"latency_total", toJson(s.total)},
          {"latency_queue_wait", toJson(s.queueWait)},
          {"latency_compute", toJson(s.compute)},
          {"time_to_first_token", toJson(s.timeToFirstToken)},
          {"mean_batch_size", s.meanBatchSize},
          {"padding_efficiency", s.paddingEfficiency},
          {"busy_fraction", s.busyFraction},
          {"executor_busy", s.executorBusy}}},
        {"cumulative",
         {{"latency_total", toJson(s.totalAll)},
          {"latency_queue_wait", toJson(s.queueWaitAll)},
          {"latency_compute", toJson(s.computeAll)},
          {"time_to_first_token", toJson(s.timeToFirstTokenAll)},
          {"mean_batch_size", s.meanBatchSizeAll},
          {"padding_efficiency", s.paddingEfficiencyAll}}},
        {"config_history", history},
    };
}

} // namespace bp
