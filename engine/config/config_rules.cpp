// The rules and descriptions over the knob table (config_rules.h).
#include "config_rules.h"

#include "knobs.h"

#include <algorithm>

namespace bp {

Status validate(const BatchingConfig &c)
{
    // Every range lives in the knob table (engine/config/knob_table.cpp).
    for (const Knob &k : knobs())
        if (Status s = checkKnob(k, c); !s)
            return s;
    return validateServerModel(c);
}

Status validateServerModel(const BatchingConfig &c)
{
    const ServerModelConfig &m = c.server;
    const bool continuous = c.policy == PolicyKind::Continuous;
    const bool iteration = m.kind == ServerKind::Vllm || m.kind == ServerKind::Tgi ||
                           m.kind == ServerKind::Sglang || m.kind == ServerKind::LlamaCpp;
    if (iteration && !continuous)
        return {StatusCode::InvalidArgument, std::string(serverKindName(m.kind)) +
                                                 " batches at the iteration level: its model runs under "
                                                 "policy continuous"};
    if (m.kind == ServerKind::Triton && continuous)
        return {StatusCode::InvalidArgument,
                "triton's dynamic batcher is request-level: its model runs under policy dynamic"};
    for (const Knob &k : serverKnobs(m.kind))
        if (Status s = checkKnob(k, c); !s)
            return s;
    if (m.kind == ServerKind::LlamaCpp && m.llamacpp.nUbatch > m.llamacpp.nBatch)
        return {StatusCode::InvalidArgument, "llamacpp n_ubatch " + std::to_string(m.llamacpp.nUbatch) +
                                                 " exceeds n_batch " + std::to_string(m.llamacpp.nBatch) +
                                                 " (llama.cpp caps it so)"};
    if (m.kind == ServerKind::LlamaCpp && !m.llamacpp.kvUnified && m.llamacpp.nCtx < m.llamacpp.nParallel)
        return {StatusCode::InvalidArgument, "llamacpp n_ctx " + std::to_string(m.llamacpp.nCtx) +
                                                 " leaves no context for each of " +
                                                 std::to_string(m.llamacpp.nParallel) + " slots"};
    return Status::ok();
}

std::vector<std::pair<std::string, std::string>> serverModelSettings(const ServerModelConfig &m)
{
    std::vector<std::pair<std::string, std::string>> out;
    BatchingConfig c;
    c.server = m;
    for (const Knob &k : serverKnobs(m.kind))
        if (k.listed && knobIsSet(k, c))
            out.emplace_back(std::string(k.name), formatKnobValue(k, c));
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
    // server's names, as its settings line lists them.
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
