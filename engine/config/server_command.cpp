#include "server_command.h"

#include <cmath>
#include <cstdio>
#include <string_view>

namespace bp {

namespace {

// A setting as a number: JSON numbers, or numeric text (vLLM's
// cache_config_info labels are strings).
std::optional<double> number(const nlohmann::json &settings, std::string_view key)
{
    const auto it = settings.find(std::string(key));
    if (it == settings.end())
        return std::nullopt;
    if (it->is_number())
        return it->get<double>();
    if (it->is_boolean())
        return it->get<bool>() ? 1.0 : 0.0;
    if (it->is_string()) {
        const std::string &t = it->get_ref<const std::string &>();
        if (t == "True" || t == "true")
            return 1.0;
        if (t == "False" || t == "false")
            return 0.0;
        char *end = nullptr;
        const double v = std::strtod(t.c_str(), &end);
        if (end && end != t.c_str() && *end == '\0')
            return v;
    }
    return std::nullopt;
}

template <typename T> void read(const nlohmann::json &s, std::string_view key, T &into)
{
    if (const auto v = number(s, key))
        into = T(std::llround(*v));
}
void readReal(const nlohmann::json &s, std::string_view key, double &into)
{
    if (const auto v = number(s, key))
        into = *v;
}

std::string real(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

} // namespace

BatchingConfig serverConfigFromSettings(ServerKind kind, const nlohmann::json &s,
                                        std::optional<std::int64_t> kv, BatchingConfig c)
{
    c.server.kind = kind;
    switch (kind) {
    case ServerKind::BatchPilot: return c;
    case ServerKind::Vllm: {
        c.policy = PolicyKind::Continuous;
        VllmKnobs &k = c.server.vllm;
        read(s, "max_num_seqs", k.maxNumSeqs);
        read(s, "max_num_batched_tokens", k.maxNumBatchedTokens);
        if (const auto v = number(s, "enable_chunked_prefill"))
            k.enableChunkedPrefill = *v != 0;
        read(s, "long_prefill_token_threshold", k.longPrefillTokenThreshold);
        read(s, "block_size", k.blockSize);
        std::optional<double> blocks = number(s, "num_gpu_blocks_override");
        if (!blocks)
            blocks = number(s, "num_gpu_blocks");
        if (blocks && *blocks > 0)
            k.kvCacheTokens = std::llround(*blocks) * k.blockSize;
        else if (kv)
            k.kvCacheTokens = *kv;
        break;
    }
    case ServerKind::Tgi: {
        c.policy = PolicyKind::Continuous;
        TgiKnobs &k = c.server.tgi;
        if (kv)
            k.maxBatchTotalTokens = int(std::min<std::int64_t>(*kv, 100000000));
        read(s, "max_batch_total_tokens", k.maxBatchTotalTokens);
        read(s, "max_batch_prefill_tokens", k.maxBatchPrefillTokens);
        readReal(s, "waiting_served_ratio", k.waitingServedRatio);
        read(s, "max_waiting_tokens", k.maxWaitingTokens);
        read(s, "max_batch_size", k.maxBatchSize);
        read(s, "max_concurrent_requests", k.maxConcurrentRequests);
        break;
    }
    case ServerKind::Sglang: {
        c.policy = PolicyKind::Continuous;
        SglangKnobs &k = c.server.sglang;
        if (kv)
            k.maxTotalTokens = *kv;
        read(s, "max_running_requests", k.maxRunningRequests);
        read(s, "chunked_prefill_size", k.chunkedPrefillSize);
        if (k.chunkedPrefillSize < 0)
            k.chunkedPrefillSize = 0; // -1: chunking off
        read(s, "max_prefill_tokens", k.maxPrefillTokens);
        read(s, "max_total_tokens", k.maxTotalTokens);
        if (const auto it = s.find("schedule_policy"); it != s.end() && it->is_string())
            k.schedulePolicy = it->get<std::string>();
        readReal(s, "schedule_conservativeness", k.scheduleConservativeness);
        break;
    }
    case ServerKind::Triton: {
        c.policy = PolicyKind::Dynamic;
        read(s, "max_batch_size", c.maxBatchSize);
        c.maxBatchSize = std::clamp(c.maxBatchSize, 1, 1024);
        if (const auto us = number(s, "dynamic_batching.max_queue_delay_microseconds"))
            c.maxQueueDelay = std::chrono::microseconds(std::llround(*us));
        else
            c.maxQueueDelay = Duration::zero(); // Triton's default
        c.server.triton.preferredBatchSize.clear();
        if (const auto it = s.find("dynamic_batching.preferred_batch_size"); it != s.end() && it->is_array())
            for (const auto &v : *it)
                if (v.is_number())
                    c.server.triton.preferredBatchSize.push_back(v.get<int>());
        break;
    }
    }
    return c;
}

std::string serverLaunchText(const BatchingConfig &c, const std::string &model)
{
    const ServerModelConfig &m = c.server;
    std::string s;
    auto flag = [&s](std::string_view name, const std::string &value) {
        s += " \\\n  --";
        s += name;
        if (!value.empty())
            s += " " + value;
    };
    switch (m.kind) {
    case ServerKind::BatchPilot: return {};
    case ServerKind::Vllm:
        s = "vllm serve " + model;
        flag("max-num-seqs", std::to_string(m.vllm.maxNumSeqs));
        flag("max-num-batched-tokens", std::to_string(m.vllm.maxNumBatchedTokens));
        flag(m.vllm.enableChunkedPrefill ? "enable-chunked-prefill" : "no-enable-chunked-prefill", "");
        if (m.vllm.longPrefillTokenThreshold > 0)
            flag("long-prefill-token-threshold", std::to_string(m.vllm.longPrefillTokenThreshold));
        break;
    case ServerKind::Tgi:
        s = "text-generation-launcher --model-id " + model;
        flag("max-batch-total-tokens", std::to_string(m.tgi.maxBatchTotalTokens));
        flag("max-batch-prefill-tokens", std::to_string(m.tgi.maxBatchPrefillTokens));
        flag("waiting-served-ratio", real(m.tgi.waitingServedRatio));
        flag("max-waiting-tokens", std::to_string(m.tgi.maxWaitingTokens));
        if (m.tgi.maxBatchSize > 0)
            flag("max-batch-size", std::to_string(m.tgi.maxBatchSize));
        flag("max-concurrent-requests", std::to_string(m.tgi.maxConcurrentRequests));
        break;
    case ServerKind::Sglang:
        s = "python -m sglang.launch_server --model-path " + model;
        flag("max-running-requests", std::to_string(m.sglang.maxRunningRequests));
        flag("chunked-prefill-size",
             std::to_string(m.sglang.chunkedPrefillSize > 0 ? m.sglang.chunkedPrefillSize : -1));
        flag("max-prefill-tokens", std::to_string(m.sglang.maxPrefillTokens));
        flag("schedule-policy", m.sglang.schedulePolicy);
        flag("schedule-conservativeness", real(m.sglang.scheduleConservativeness));
        break;
    case ServerKind::Triton: {
        s = "max_batch_size: " + std::to_string(c.maxBatchSize) + "\ndynamic_batching {\n";
        if (!m.triton.preferredBatchSize.empty()) {
            s += "  preferred_batch_size: [ ";
            for (std::size_t i = 0; i < m.triton.preferredBatchSize.size(); ++i)
                s += (i ? ", " : "") + std::to_string(m.triton.preferredBatchSize[i]);
            s += " ]\n";
        }
        s += "  max_queue_delay_microseconds: " + std::to_string(std::llround(toMicros(c.maxQueueDelay))) +
             "\n}";
        break;
    }
    }
    return s + "\n";
}

} // namespace bp
