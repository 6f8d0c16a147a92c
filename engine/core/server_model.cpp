#include "server_model.h"

#include <cstdio>

namespace bp {

namespace {

std::string number(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

Status outOfRange(std::string_view server, std::string_view knob, double value, std::string_view range)
{
    return {StatusCode::InvalidArgument, std::string(server) + " " + std::string(knob) + " " + number(value) +
                                             " is outside " + std::string(range)};
}

} // namespace

std::string_view serverKindName(ServerKind kind)
{
    switch (kind) {
    case ServerKind::BatchPilot: return "batchpilot";
    case ServerKind::Vllm: return "vllm";
    case ServerKind::Tgi: return "tgi";
    case ServerKind::Sglang: return "sglang";
    case ServerKind::Triton: return "triton";
    }
    return "batchpilot";
}

std::optional<ServerKind> parseServerKind(std::string_view name)
{
    for (ServerKind k :
         {ServerKind::BatchPilot, ServerKind::Vllm, ServerKind::Tgi, ServerKind::Sglang, ServerKind::Triton})
        if (serverKindName(k) == name)
            return k;
    return std::nullopt;
}

Status validateServerModel(const ServerModelConfig &m, bool continuous, int maxBatchSize)
{
    const bool iteration =
        m.kind == ServerKind::Vllm || m.kind == ServerKind::Tgi || m.kind == ServerKind::Sglang;
    if (iteration && !continuous)
        return {StatusCode::InvalidArgument, std::string(serverKindName(m.kind)) +
                                                 " batches at the iteration level: its model runs under "
                                                 "policy continuous"};
    if (m.kind == ServerKind::Triton && continuous)
        return {StatusCode::InvalidArgument,
                "triton's dynamic batcher is request-level: its model runs under policy dynamic"};
    switch (m.kind) {
    case ServerKind::BatchPilot: break;
    case ServerKind::Vllm: {
        const VllmKnobs &k = m.vllm;
        if (k.maxNumSeqs < 1 || k.maxNumSeqs > 65536)
            return outOfRange("vllm", "max_num_seqs", k.maxNumSeqs, "[1, 65536]");
        if (k.maxNumBatchedTokens < 1 || k.maxNumBatchedTokens > 1000000)
            return outOfRange("vllm", "max_num_batched_tokens", k.maxNumBatchedTokens, "[1, 1000000]");
        if (k.longPrefillTokenThreshold < 0)
            return outOfRange("vllm", "long_prefill_token_threshold", k.longPrefillTokenThreshold, "[0, ∞)");
        if (k.blockSize < 1 || k.blockSize > 1024)
            return outOfRange("vllm", "block_size", k.blockSize, "[1, 1024]");
        if (k.kvCacheTokens < 0)
            return outOfRange("vllm", "kv_cache_tokens", double(k.kvCacheTokens), "[0, ∞)");
        break;
    }
    case ServerKind::Tgi: {
        const TgiKnobs &k = m.tgi;
        if (k.maxBatchTotalTokens < 1 || k.maxBatchTotalTokens > 100000000)
            return outOfRange("tgi", "max_batch_total_tokens", k.maxBatchTotalTokens, "[1, 1e8]");
        if (k.maxBatchPrefillTokens < 1 || k.maxBatchPrefillTokens > 10000000)
            return outOfRange("tgi", "max_batch_prefill_tokens", k.maxBatchPrefillTokens, "[1, 1e7]");
        if (!(k.waitingServedRatio >= 0 && k.waitingServedRatio <= 100))
            return outOfRange("tgi", "waiting_served_ratio", k.waitingServedRatio, "[0, 100]");
        if (k.maxWaitingTokens < 1 || k.maxWaitingTokens > 1000000)
            return outOfRange("tgi", "max_waiting_tokens", k.maxWaitingTokens, "[1, 1e6]");
        if (k.maxBatchSize < 0 || k.maxBatchSize > 65536)
            return outOfRange("tgi", "max_batch_size", k.maxBatchSize, "[0, 65536] (0 = none)");
        if (k.maxConcurrentRequests < 1 || k.maxConcurrentRequests > 1000000)
            return outOfRange("tgi", "max_concurrent_requests", k.maxConcurrentRequests, "[1, 1e6]");
        break;
    }
    case ServerKind::Sglang: {
        const SglangKnobs &k = m.sglang;
        if (k.maxRunningRequests < 1 || k.maxRunningRequests > 65536)
            return outOfRange("sglang", "max_running_requests", k.maxRunningRequests, "[1, 65536]");
        if (k.chunkedPrefillSize < 0 || k.chunkedPrefillSize > 10000000)
            return outOfRange("sglang", "chunked_prefill_size", k.chunkedPrefillSize, "[0, 1e7] (0 = off)");
        if (k.maxPrefillTokens < 1 || k.maxPrefillTokens > 10000000)
            return outOfRange("sglang", "max_prefill_tokens", k.maxPrefillTokens, "[1, 1e7]");
        if (k.schedulePolicy != "fcfs" && k.schedulePolicy != "lpm")
            return {StatusCode::InvalidArgument,
                    "sglang schedule_policy '" + k.schedulePolicy + "' is not modelled: fcfs or lpm"};
        if (!(k.scheduleConservativeness > 0 && k.scheduleConservativeness <= 10))
            return outOfRange("sglang", "schedule_conservativeness", k.scheduleConservativeness, "(0, 10]");
        if (k.maxTotalTokens < 0)
            return outOfRange("sglang", "max_total_tokens", double(k.maxTotalTokens), "[0, ∞)");
        break;
    }
    case ServerKind::Triton: {
        int last = 0;
        for (int size : m.triton.preferredBatchSize) {
            if (size < 1 || size > maxBatchSize)
                return outOfRange("triton", "preferred_batch_size", size,
                                  "[1, max_batch_size " + std::to_string(maxBatchSize) + "]");
            if (size <= last)
                return {StatusCode::InvalidArgument, "triton preferred_batch_size must be increasing"};
            last = size;
        }
        break;
    }
    }
    return Status::ok();
}

std::vector<std::pair<std::string, std::string>> serverModelSettings(const ServerModelConfig &m)
{
    std::vector<std::pair<std::string, std::string>> out;
    auto add = [&out](std::string key, std::string value) {
        out.emplace_back(std::move(key), std::move(value));
    };
    switch (m.kind) {
    case ServerKind::BatchPilot: break;
    case ServerKind::Vllm:
        add("max_num_seqs", std::to_string(m.vllm.maxNumSeqs));
        add("max_num_batched_tokens", std::to_string(m.vllm.maxNumBatchedTokens));
        add("enable_chunked_prefill", m.vllm.enableChunkedPrefill ? "true" : "false");
        if (m.vllm.longPrefillTokenThreshold > 0)
            add("long_prefill_token_threshold", std::to_string(m.vllm.longPrefillTokenThreshold));
        if (m.vllm.kvCacheTokens > 0)
            add("kv_cache_tokens", std::to_string(m.vllm.kvCacheTokens));
        break;
    case ServerKind::Tgi:
        add("max_batch_total_tokens", std::to_string(m.tgi.maxBatchTotalTokens));
        add("max_batch_prefill_tokens", std::to_string(m.tgi.maxBatchPrefillTokens));
        add("waiting_served_ratio", number(m.tgi.waitingServedRatio));
        add("max_waiting_tokens", std::to_string(m.tgi.maxWaitingTokens));
        if (m.tgi.maxBatchSize > 0)
            add("max_batch_size", std::to_string(m.tgi.maxBatchSize));
        add("max_concurrent_requests", std::to_string(m.tgi.maxConcurrentRequests));
        break;
    case ServerKind::Sglang:
        add("max_running_requests", std::to_string(m.sglang.maxRunningRequests));
        add("chunked_prefill_size", std::to_string(m.sglang.chunkedPrefillSize));
        add("max_prefill_tokens", std::to_string(m.sglang.maxPrefillTokens));
        add("schedule_policy", m.sglang.schedulePolicy);
        add("schedule_conservativeness", number(m.sglang.scheduleConservativeness));
        if (m.sglang.maxTotalTokens > 0)
            add("max_total_tokens", std::to_string(m.sglang.maxTotalTokens));
        break;
    case ServerKind::Triton: {
        std::string sizes;
        for (std::size_t i = 0; i < m.triton.preferredBatchSize.size(); ++i)
            sizes += (i ? "," : "") + std::to_string(m.triton.preferredBatchSize[i]);
        if (!sizes.empty())
            add("preferred_batch_size", "[" + sizes + "]");
        break;
    }
    }
    return out;
}

std::string describeServerModel(const ServerModelConfig &m)
{
    if (m.kind == ServerKind::BatchPilot)
        return {};
    std::string s(serverKindName(m.kind));
    for (const auto &[key, value] : serverModelSettings(m))
        s += ' ' + key + '=' + value;
    return s;
}

} // namespace bp
