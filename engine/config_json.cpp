#include "config_json.h"

#include <fstream>
#include <sstream>

namespace bp {

using nlohmann::json;

namespace {
std::int64_t us(Duration d)
{
    return std::chrono::duration_cast<std::chrono::microseconds>(d).count();
}
} // namespace

json toJson(const BatchingConfig &c)
{
    return json{
        {"policy", std::string(policyName(c.policy))},
        {"max_batch_size", c.maxBatchSize},
        {"max_queue_delay_us", us(c.maxQueueDelay)},
        {"static_batch_size", c.staticBatchSize},
        {"static_padded_length", c.staticPaddedLength},
        {"static_flush_on_drain", c.staticFlushOnDrain},
        {"bucket_edges", c.bucketEdges},
        {"queue_capacity", c.queueCapacity},
        {"instances", c.instances},
        {"memory_batch_limit", c.memoryBatchLimit},
        {"priority_aging_us", us(c.priorityAging)},
        {"adaptive_delay",
         {{"enabled", c.adaptiveDelay.enabled},
          {"min_delay_us", us(c.adaptiveDelay.minDelay)},
          {"max_delay_us", us(c.adaptiveDelay.maxDelay)},
          {"period_us", us(c.adaptiveDelay.period)},
          {"fill", c.adaptiveDelay.fill}}},
        {"slo",
         {{"enabled", c.slo.enabled},
          {"p99_target_us", us(c.slo.p99Target)},
          {"min_batch", c.slo.minBatch},
          {"max_batch", c.slo.maxBatch},
          {"min_delay_us", us(c.slo.minDelay)},
          {"max_delay_us", us(c.slo.maxDelay)},
          {"period_us", us(c.slo.period)},
          {"batch_step", c.slo.batchStep},
          {"delay_step_us", us(c.slo.delayStep)},
          {"decrease", c.slo.decrease}}},
        {"hybrid",
         {{"static_sizes", c.hybrid.staticSizes},
          {"max_static_length", c.hybrid.maxStaticLength},
          {"min_static_rate", c.hybrid.minStaticRate},
          {"static_max_wait_us", us(c.hybrid.staticMaxWait)}}},
        {"cache", {{"enabled", c.cache.enabled}, {"max_entries", c.cache.maxEntries}, {"max_bytes", c.cache.maxBytes}}},
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

Status readBool(const json &j, const std::string &field, bool &out)
{
    if (!j.is_boolean())
        return typeError(field, "a boolean", j);
    out = j.get<bool>();
    return Status::ok();
}

Status readNumber(const json &j, const std::string &field, double &out)
{
    if (!j.is_number())
        return typeError(field, "a number", j);
    out = j.get<double>();
    return Status::ok();
}

constexpr long long kIntMax = 1'000'000'000;

Status readIntField(const json &j, const std::string &field, int &out)
{
    long long v = 0;
    if (Status s = readInt(j, field, -kIntMax, kIntMax, v); !s)
        return s;
    out = int(v);
    return Status::ok();
}

Status readMicros(const json &j, const std::string &field, Duration &out)
{
    long long v = 0;
    if (Status s = readInt(j, field, -kIntMax * 1000, kIntMax * 1000, v); !s)
        return s;
    out = std::chrono::microseconds(v);
    return Status::ok();
}

Status readIntList(const json &j, const std::string &field, std::vector<int> &out)
{
    if (!j.is_array())
        return typeError(field, "an array of integers", j);
    std::vector<int> values;
    for (const auto &e : j) {
        int v = 0;
        if (Status s = readIntField(e, field + "[]", v); !s)
            return s;
        values.push_back(v);
    }
    out = std::move(values);
    return Status::ok();
}

// A nested object whose fields are read by `apply(key, value)`. Each field
// read is named in `names` (ConfigPatch's names: "slo.p99_target_us").
template <typename Apply>
Status readObject(const json &j, const std::string &name, std::vector<std::string> &names, Apply apply)
{
    if (!j.is_object())
        return typeError(name, "an object", j);
    for (const auto &[key, value] : j.items()) {
        const std::string field = name + "." + key;
        std::optional<Status> s = apply(key, value, field);
        if (!s)
            return Status(StatusCode::InvalidArgument, "unknown config field '" + field + "'");
        if (!*s)
            return *s;
        names.push_back(field);
    }
    return Status::ok();
}

Status readAdaptive(const json &j, AdaptiveDelayConfig &a, std::vector<std::string> &names)
{
    return readObject(j, "adaptive_delay", names, [&](const std::string &k, const json &v, const std::string &f)
                                               -> std::optional<Status> {
        if (k == "enabled") return readBool(v, f, a.enabled);
        if (k == "min_delay_us") return readMicros(v, f, a.minDelay);
        if (k == "max_delay_us") return readMicros(v, f, a.maxDelay);
        if (k == "period_us") return readMicros(v, f, a.period);
        if (k == "fill") return readNumber(v, f, a.fill);
        return std::nullopt;
    });
}

Status readSlo(const json &j, SloControllerConfig &c, std::vector<std::string> &names)
{
    return readObject(j, "slo", names, [&](const std::string &k, const json &v, const std::string &f)
                                    -> std::optional<Status> {
        if (k == "enabled") return readBool(v, f, c.enabled);
        if (k == "p99_target_us") return readMicros(v, f, c.p99Target);
        if (k == "min_batch") return readIntField(v, f, c.minBatch);
        if (k == "max_batch") return readIntField(v, f, c.maxBatch);
        if (k == "min_delay_us") return readMicros(v, f, c.minDelay);
        if (k == "max_delay_us") return readMicros(v, f, c.maxDelay);
        if (k == "period_us") return readMicros(v, f, c.period);
        if (k == "batch_step") return readIntField(v, f, c.batchStep);
        if (k == "delay_step_us") return readMicros(v, f, c.delayStep);
        if (k == "decrease") return readNumber(v, f, c.decrease);
        return std::nullopt;
    });
}

Status readHybrid(const json &j, HybridConfig &h, std::vector<std::string> &names)
{
    return readObject(j, "hybrid", names, [&](const std::string &k, const json &v, const std::string &f)
                                       -> std::optional<Status> {
        if (k == "static_sizes") return readIntList(v, f, h.staticSizes);
        if (k == "max_static_length") return readIntField(v, f, h.maxStaticLength);
        if (k == "min_static_rate") return readNumber(v, f, h.minStaticRate);
        if (k == "static_max_wait_us") return readMicros(v, f, h.staticMaxWait);
        return std::nullopt;
    });
}

Status readCache(const json &j, CacheConfig &c, std::vector<std::string> &names)
{
    return readObject(j, "cache", names, [&](const std::string &k, const json &v, const std::string &f)
                                      -> std::optional<Status> {
        if (k == "enabled") return readBool(v, f, c.enabled);
        if (k == "max_entries") return readIntField(v, f, c.maxEntries);
        if (k == "max_bytes") {
            long long b = 0;
            Status s = readInt(v, f, -(1LL << 62), 1LL << 62, b);
            c.maxBytes = b;
            return s;
        }
        return std::nullopt;
    });
}

// Reads the fields of `j` into `c` (types and per-field integer ranges are
// checked here; validate() judges the whole) and names each in `names`.
Status readFields(const json &j, BatchingConfig &c, std::vector<std::string> &names)
{
    if (!j.is_object())
        return Status(StatusCode::InvalidArgument, "config must be a JSON object");
    for (const auto &[key, value] : j.items()) {
        const bool group = key == "adaptive_delay" || key == "slo" || key == "hybrid" || key == "cache";
        if (!group)
            names.push_back(key);
        long long v = 0;
        Status s;
        if (key == "policy") {
            if (!value.is_string())
                return typeError(key, "a string", value);
            auto p = parsePolicy(value.get<std::string>());
            if (!p)
                return Status(StatusCode::InvalidArgument, "unknown policy '" + value.get<std::string>() +
                                                               "' (none, static, dynamic, bucketed, hybrid)");
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
        } else if (key == "memory_batch_limit") {
            if (!(s = readIntField(value, key, c.memoryBatchLimit)))
                return s;
        } else if (key == "priority_aging_us") {
            if (!(s = readMicros(value, key, c.priorityAging)))
                return s;
        } else if (key == "adaptive_delay") {
            if (!(s = readAdaptive(value, c.adaptiveDelay, names)))
                return s;
        } else if (key == "slo") {
            if (!(s = readSlo(value, c.slo, names)))
                return s;
        } else if (key == "hybrid") {
            if (!(s = readHybrid(value, c.hybrid, names)))
                return s;
        } else if (key == "cache") {
            if (!(s = readCache(value, c.cache, names)))
                return s;
        } else {
            return Status(StatusCode::InvalidArgument, "unknown config field '" + key + "'");
        }
    }
    return Status::ok();
}

} // namespace

Result<BatchingConfig> configFromJson(const json &j, const BatchingConfig &base)
{
    BatchingConfig c = base;
    std::vector<std::string> names;
    if (Status s = readFields(j, c, names); !s)
        return s;
    if (Status s = validate(c); !s)
        return s;
    return c;
}

Result<ConfigPatch> patchFromJson(const json &j)
{
    BatchingConfig values;
    std::vector<std::string> names;
    if (Status s = readFields(j, values, names); !s)
        return s;
    return ConfigPatch::fields(values, names);
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
