#include "batching_config.h"
#include "engine/config/knobs.h"

#include <algorithm>
#include <cstdio>

namespace bp {

std::string_view policyName(PolicyKind kind)
{
    switch (kind) {
    case PolicyKind::None: return "none";
    case PolicyKind::Static: return "static";
    case PolicyKind::Dynamic: return "dynamic";
    case PolicyKind::Bucketed: return "bucketed";
    case PolicyKind::Hybrid: return "hybrid";
    case PolicyKind::Continuous: return "continuous";
    }
    return "unknown";
}

std::optional<PolicyKind> parsePolicy(std::string_view name)
{
    for (auto k : {PolicyKind::None, PolicyKind::Static, PolicyKind::Dynamic, PolicyKind::Bucketed,
                   PolicyKind::Hybrid, PolicyKind::Continuous})
        if (policyName(k) == name)
            return k;
    return std::nullopt;
}

int BatchingConfig::queueCount() const
{
    switch (policy) {
    case PolicyKind::Bucketed: return int(bucketEdges.size()) + 1;
    case PolicyKind::Hybrid: return int(hybrid.staticSizes.size()) + 1;
    default: return 1;
    }
}

int BatchingConfig::bucketFor(int length) const
{
    if (policy == PolicyKind::Hybrid)
        return int(hybrid.staticSizes.size());
    if (policy != PolicyKind::Bucketed)
        return 0;
    auto it = std::lower_bound(bucketEdges.begin(), bucketEdges.end(), length);
    return int(it - bucketEdges.begin());
}

std::string BatchingConfig::queueName(int q) const
{
    if (policy == PolicyKind::Hybrid) {
        if (q >= 0 && q < int(hybrid.staticSizes.size()))
            return "static-" + std::to_string(hybrid.staticSizes[std::size_t(q)]);
        return "dynamic";
    }
    if (policy != PolicyKind::Bucketed)
        return "all";
    if (q <= 0)
        return "≤" + std::to_string(bucketEdges.front());
    if (q >= int(bucketEdges.size()))
        return ">" + std::to_string(bucketEdges.back());
    return std::to_string(bucketEdges[std::size_t(q - 1)] + 1) + "–" +
           std::to_string(bucketEdges[std::size_t(q)]);
}

bool GoodputConfig::met(Duration firstToken, Duration perToken, Duration endToEnd) const
{
    if (ttft > Duration::zero() && (firstToken <= Duration::zero() || firstToken > ttft))
        return false;
    if (tpot > Duration::zero() && perToken > tpot)
        return false;
    return e2e <= Duration::zero() || endToEnd <= e2e;
}

Status validate(const BatchingConfig &c)
{
    // Every range lives in the knob table (engine/config/knob_table.cpp).
    for (const Knob &k : knobs())
        if (Status s = checkKnob(k, c); !s)
            return s;
    return validateServerModel(c.server, c.policy == PolicyKind::Continuous, c.maxBatchSize);
}

std::string formatDuration(Duration d)
{
    const double ns = double(d.count());
    char buf[32];
    if (ns == 0)
        return "0";
    if (ns < 1e3)
        std::snprintf(buf, sizeof buf, "%gns", ns);
    else if (ns < 1e6)
        std::snprintf(buf, sizeof buf, "%gµs", ns / 1e3);
    else if (ns < 1e9)
        std::snprintf(buf, sizeof buf, "%gms", ns / 1e6);
    else
        std::snprintf(buf, sizeof buf, "%gs", ns / 1e9);
    return buf;
}

std::string describeConfig(const BatchingConfig &c)
{
    if (c.server.kind != ServerKind::BatchPilot && c.server.kind != ServerKind::Triton)
        return describeServerModel(c.server); // the server's knobs, not BatchPilot's
    std::string s(policyName(c.policy));
    auto add = [&s](std::string_view key, const std::string &value) {
        s += ' ';
        s += key;
        s += '=';
        s += value;
    };
    // if-chains rather than a switch: a policy added later gets the
    // dynamic-style description instead of a build warning.
    if (c.policy == PolicyKind::None) {
    } else if (c.policy == PolicyKind::Static) {
        add("static_batch_size", std::to_string(c.staticBatchSize));
        add("static_padded_length", std::to_string(c.staticPaddedLength));
    } else if (c.policy == PolicyKind::Continuous) {
        const ContinuousConfig &k = c.continuous;
        add("max_num_seqs", std::to_string(k.maxNumSeqs));
        add("max_num_batched_tokens", std::to_string(k.maxNumBatchedTokens));
        if (k.chunkedPrefill)
            add("prefill_chunk", std::to_string(k.prefillChunk));
        else
            s += " no_chunked_prefill";
        if (k.kvCacheTokens > 0)
            add("kv_cache_tokens", std::to_string(k.kvCacheTokens));
        if (!k.decodeFirst)
            s += " prefill_first";
        if (k.priorityOrder)
            s += " priority_order";
        if (c.prefixCache.enabled)
            add("prefix_cache_block_tokens", std::to_string(c.prefixCache.blockTokens));
    } else {
        add("max_batch_size", std::to_string(c.maxBatchSize));
        add("max_queue_delay", formatDuration(c.maxQueueDelay));
    }
    if (c.policy == PolicyKind::Bucketed) {
        std::string edges;
        for (std::size_t i = 0; i < c.bucketEdges.size(); ++i)
            edges += (i ? "," : "") + std::to_string(c.bucketEdges[i]);
        add("bucket_edges", edges);
    }
    if (c.instances > 1)
        add("instances", std::to_string(c.instances));
    if (c.memoryBatchLimit > 0)
        add("memory_batch_limit", std::to_string(c.memoryBatchLimit));
    if (c.policy != PolicyKind::Continuous && c.policy != PolicyKind::None &&
        c.policy != PolicyKind::Static) {
        if (c.adaptiveDelay.enabled)
            s += " adaptive_delay";
        if (c.slo.enabled)
            add("slo_p99", formatDuration(c.slo.p99Target));
    }
    if (c.cache.enabled)
        s += " cache";
    if (c.server.kind == ServerKind::Triton) // "triton preferred_batch_size=[4,8] dynamic ..."
        return describeServerModel(c.server) + " " + s;
    return s;
}

std::string describeChange(const BatchingConfig &a, const BatchingConfig &b)
{
    std::string out;
    for (const Knob &k : knobs()) {
        std::string from = formatKnobValue(k, a), to = formatKnobValue(k, b);
        if (from == to)
            continue;
        std::string field = k.label();
        if (k.type == KnobType::IntList) { // "64,128" rather than "[64,128]"
            from = from.substr(1, from.size() - 2);
            to = to.substr(1, to.size() - 2);
        } else if (k.type == KnobType::Bool && field.ends_with(".enabled")) { // "slo off→on"
            field.resize(field.size() - std::string_view(".enabled").size());
            from = from == "true" ? "on" : "off";
            to = to == "true" ? "on" : "off";
        }
        if (!out.empty())
            out += ", ";
        out += field + ' ' + from + "→" + to;
    }
    // A server model's own knobs (vLLM, TGI, SGLang, Triton), by the
    // server's names: the knob table does not hold them.
    if (a.server != b.server) {
        const auto before = serverModelSettings(a.server), after = serverModelSettings(b.server);
        if (a.server.kind != b.server.kind) {
            if (!out.empty())
                out += ", ";
            out += std::string("server ") + std::string(serverKindName(a.server.kind)) + "→" +
                   std::string(serverKindName(b.server.kind));
        }
        for (const auto &entry : after) {
            // not structured bindings: clang 14 cannot capture them in a lambda
            const std::string &key = entry.first, &value = entry.second;
            const auto it =
                std::find_if(before.begin(), before.end(), [&](const auto &p) { return p.first == key; });
            const std::string from = it == before.end() ? "-" : it->second;
            if (from == value)
                continue;
            if (!out.empty())
                out += ", ";
            out += key + ' ' + from + "→" + value;
        }
        for (const auto &entry : before)
            if (std::none_of(after.begin(), after.end(),
                             [&](const auto &p) { return p.first == entry.first; })) {
                if (!out.empty())
                    out += ", ";
                out += entry.first + ' ' + entry.second + "→-";
            }
    }
    return out;
}

} // namespace bp
