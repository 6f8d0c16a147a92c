#include "server_command.h"

#include "knobs.h"

#include <algorithm>
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

// One knob of the table from the server's setting of its name (absent: kept).
void readSetting(const Knob &k, const nlohmann::json &s, BatchingConfig &c)
{
    if (k.type == KnobType::Text) {
        if (const auto it = s.find(std::string(k.name)); it != s.end() && it->is_string())
            k.setText(c, it->get<std::string>());
        return;
    }
    if (k.type == KnobType::IntList) {
        if (const auto it = s.find(std::string(k.name)); it != s.end() && it->is_array()) {
            std::vector<int> items;
            for (const auto &v : *it)
                if (v.is_number())
                    items.push_back(v.get<int>());
            k.itemsMut(c) = std::move(items);
        }
        return;
    }
    const auto v = number(s, k.name);
    if (!v)
        return;
    if (k.type == KnobType::Bool)
        k.set(c, *v != 0 ? 1 : 0);
    else if (k.type == KnobType::Double)
        k.set(c, *v);
    else
        k.set(c, double(std::llround(*v)));
}

} // namespace

BatchingConfig serverConfigFromSettings(ServerKind kind, const nlohmann::json &s,
                                        std::optional<std::int64_t> kv, BatchingConfig c)
{
    c.server.kind = kind;
    switch (kind) {
    case ServerKind::BatchPilot: return c;
    case ServerKind::Triton: {
        // Its batch size and delay are BatchPilot's knobs, its settings the
        // config.pbtxt's names.
        c.policy = PolicyKind::Dynamic;
        if (const auto v = number(s, "max_batch_size"))
            c.maxBatchSize = int(std::llround(*v));
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
        return c;
    }
    case ServerKind::Vllm:
    case ServerKind::Tgi:
    case ServerKind::Sglang:
    case ServerKind::LlamaCpp: break;
    }
    c.policy = PolicyKind::Continuous;
    // The KV capacity measured or published, where the settings do not say.
    if (kv && kind == ServerKind::Tgi)
        c.server.tgi.maxBatchTotalTokens = int(std::min<std::int64_t>(*kv, 100000000));
    if (kv && kind == ServerKind::Sglang)
        c.server.sglang.maxTotalTokens = *kv;
    if (kv && kind == ServerKind::LlamaCpp)
        c.server.llamacpp.nCtx = int(std::min<std::int64_t>(*kv, 100000000));
    for (const Knob &k : serverKnobs(kind))
        readSetting(k, s, c);
    if (kind == ServerKind::Vllm) {
        // vLLM publishes its KV cache in blocks.
        VllmKnobs &k = c.server.vllm;
        std::optional<double> blocks = number(s, "num_gpu_blocks_override");
        if (!blocks)
            blocks = number(s, "num_gpu_blocks");
        if (blocks && *blocks > 0)
            k.kvCacheTokens = std::llround(*blocks) * k.blockSize;
        else if (kv)
            k.kvCacheTokens = *kv;
    }
    if (kind == ServerKind::LlamaCpp)
        c.prefixCache.enabled = true; // cache_prompt, on by default: its prompt cache
    if (kind == ServerKind::Sglang && c.server.sglang.chunkedPrefillSize < 0)
        c.server.sglang.chunkedPrefillSize = 0; // -1: chunking off
    return c;
}

std::string serverLaunchText(const BatchingConfig &c, const std::string &model)
{
    const ServerModelConfig &m = c.server;
    std::string s;
    switch (m.kind) {
    case ServerKind::BatchPilot: return {};
    case ServerKind::Vllm: s = "vllm serve " + model; break;
    case ServerKind::Tgi: s = "text-generation-launcher --model-id " + model; break;
    case ServerKind::Sglang: s = "python -m sglang.launch_server --model-path " + model; break;
    case ServerKind::LlamaCpp: s = "llama-server -m " + model + " --metrics"; break;
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
        return s + "\n";
    }
    }
    // One flag per row that has one: "--max-num-seqs 64", a Bool's false as
    // "--no-" + flag, a knob not set left out.
    for (const Knob &k : serverKnobs(m.kind)) {
        if (k.flag.empty() || !knobIsSet(k, c))
            continue;
        s += " \\\n  --";
        if (k.type == KnobType::Bool) {
            s += std::string(k.get(c) != 0 ? "" : "no-") + std::string(k.flag);
            continue;
        }
        s += std::string(k.flag) + " ";
        if (k.type != KnobType::Text && !k.flagZero.empty() && k.get(c) == 0)
            s += std::string(k.flagZero);
        else
            s += formatKnobValue(k, c);
    }
    return s + "\n";
}

} // namespace bp
