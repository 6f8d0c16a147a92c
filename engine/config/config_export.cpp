#include "config_export.h"

#include "config_export_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace bp {

namespace {

struct FormatName {
    ServerFormat format;
    std::string_view name;
    std::string_view title;
    std::string_view reference;
};

constexpr FormatName kFormats[] = {
    {ServerFormat::Triton, "triton", "Triton Inference Server config.pbtxt",
     "https://docs.nvidia.com/deeplearning/triton-inference-server/user-guide/docs/user_guide/"
     "model_configuration.html"},
    {ServerFormat::Vllm, "vllm", "vLLM engine arguments",
     "https://docs.vllm.ai/en/latest/configuration/engine_args.html"},
    {ServerFormat::Tgi, "tgi", "Text Generation Inference launcher flags",
     "https://huggingface.co/docs/text-generation-inference/reference/launcher"},
    {ServerFormat::TorchServe, "torchserve", "TorchServe model-config.yaml",
     "https://pytorch.org/serve/batch_inference_with_ts.html"},
    {ServerFormat::RayServe, "ray-serve", "Ray Serve deployment",
     "https://docs.ray.io/en/latest/serve/advanced-guides/dyn-req-batch.html"},
    {ServerFormat::LlamaCpp, "llamacpp", "llama.cpp llama-server flags",
     "https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md"},
    {ServerFormat::Ollama, "ollama", "Ollama server environment",
     "https://github.com/ollama/ollama/blob/main/docs/faq.md"},
};

} // namespace

namespace exporting {

std::string num(double v)
{
    char buf[32];
    if (v == std::floor(v) && std::abs(v) < 1e15)
        std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    else
        std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// Enough digits that parsing it back gives the same nanoseconds.
std::string exactNum(double v)
{
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.12g", v);
    return buf;
}

std::string joinInts(const std::vector<int> &v, const char *sep)
{
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i)
        s += (i ? sep : "") + std::to_string(v[i]);
    return s;
}

// The batch size the config produces at most, whatever its policy.
int largestBatch(const BatchingConfig &c)
{
    int n = c.maxBatchSize;
    switch (c.policy) {
    case PolicyKind::None: n = 1; break;
    case PolicyKind::Static: n = c.staticBatchSize; break;
    case PolicyKind::Hybrid:
        for (int s : c.hybrid.staticSizes)
            n = std::max(n, s);
        break;
    default: break;
    }
    if (c.memoryBatchLimit > 0)
        n = std::min(n, c.memoryBatchLimit);
    return n;
}

// Which knobs the batch size came from.
std::string batchSource(const BatchingConfig &c)
{
    std::string s = c.policy == PolicyKind::None     ? "policy none: one request per batch"
                    : c.policy == PolicyKind::Static ? "static_batch_size"
                    : c.policy == PolicyKind::Hybrid ? "max_batch_size and hybrid.static_sizes"
                                                     : "max_batch_size";
    if (c.memoryBatchLimit > 0)
        s += ", capped by memory_batch_limit";
    return s;
}

// The policy the written syntax reads back as (import-config), so that a knob
// is marked as mapped only when the import recovers it.
PolicyKind writtenPolicy(const BatchingConfig &c, BatchSyntax syntax)
{
    if (syntax == BatchSyntax::SizeOnly)
        return PolicyKind::Dynamic;
    const std::vector<int> preferred = c.policy == PolicyKind::Static   ? std::vector<int>{c.staticBatchSize}
                                       : c.policy == PolicyKind::Hybrid ? c.hybrid.staticSizes
                                                                        : std::vector<int>{};
    return tritonPolicy(c.policy != PolicyKind::None, preferred, largestBatch(c));
}

// Marks the knobs the written batch size and policy carry exactly (the
// import gives them back); the others say why not.
void useBatchKnobs(Writer &w, BatchSyntax syntax)
{
    const BatchingConfig &c = w.c;
    const std::string server = syntax == BatchSyntax::Triton ? "Triton" : "this server";
    if (writtenPolicy(c, syntax) == c.policy)
        w.use({"policy"});
    else
        w.hint("policy", std::string("the syntax reads back as policy ") +
                             std::string(policyName(writtenPolicy(c, syntax))) + " (" + server +
                             " has no policy " + std::string(policyName(c.policy)) + " of its own)");
    // The batch size before the memory cap: when the cap binds, the written
    // size is the cap's, not a knob's.
    BatchingConfig uncapped = c;
    uncapped.memoryBatchLimit = 0;
    const bool capBinds = largestBatch(uncapped) != largestBatch(c);
    w.hint("memory_batch_limit",
           c.memoryBatchLimit > 0 ? "the server has no separate cap: the exported batch size is capped by it"
                                  : "0 = no cap; a cap would lower the exported batch size");
    const std::string capped = "the exported batch size is memory_batch_limit's, not this knob's";
    if (c.policy == PolicyKind::Static) {
        if (syntax == BatchSyntax::SizeOnly)
            w.hint("static_batch_size",
                   "the server has no wait-for-N policy: static_batch_size is exported as its "
                   "largest batch");
        else if (capBinds)
            w.hint("static_batch_size", capped);
        else
            w.use({"static_batch_size"});
    } else if (c.policy != PolicyKind::None) {
        const int largestStatic =
            c.policy == PolicyKind::Hybrid && !c.hybrid.staticSizes.empty()
                ? *std::max_element(c.hybrid.staticSizes.begin(), c.hybrid.staticSizes.end())
                : 0;
        if (capBinds)
            w.hint("max_batch_size", capped);
        else if (c.maxBatchSize < largestStatic)
            w.hint("max_batch_size", "the exported batch size is the largest of hybrid.static_sizes");
        else
            w.use({"max_batch_size"});
    }
    if (c.policy == PolicyKind::Hybrid) {
        if (syntax == BatchSyntax::Triton)
            w.use({"hybrid.static_sizes"});
        else
            w.hint("hybrid.static_sizes",
                   "the server batches up to one size: the largest static size is exported");
    }
}

// The queue delay a fixed-delay batcher should use, and a note when BatchPilot's
// is not fixed.
void delayHints(Writer &w, std::string_view server)
{
    if (w.c.adaptiveDelay.enabled)
        w.hint("adaptive_delay.enabled", std::string(server) +
                                             " has a fixed delay: max_queue_delay is exported, "
                                             "BatchPilot adapted it between adaptive_delay.min_delay "
                                             "and max_delay from the arrival rate");
    if (w.c.slo.enabled)
        w.hint("slo.enabled", std::string(server) +
                                  " has no latency-target controller: the exported batch size "
                                  "and delay are the current ones, not the controller's range");
    if (w.c.policy == PolicyKind::Static)
        w.hint("static_flush_on_drain",
               "BatchPilot's static policy waits without a time bound for a full batch; " +
                   std::string(server) + " dispatches after the queue delay");
}

} // namespace exporting

using namespace exporting;

PolicyKind tritonPolicy(bool dynamicBatching, const std::vector<int> &preferredBatchSizes, int maxBatchSize)
{
    if (!dynamicBatching)
        return PolicyKind::None;
    if (preferredBatchSizes.empty())
        return PolicyKind::Dynamic;
    if (preferredBatchSizes.size() == 1 && preferredBatchSizes.front() == maxBatchSize)
        return PolicyKind::Static;
    return PolicyKind::Hybrid;
}

std::string_view serverFormatName(ServerFormat format)
{
    return kFormats[std::size_t(format)].name;
}

std::optional<ServerFormat> parseServerFormat(std::string_view name)
{
    for (const FormatName &f : kFormats)
        if (f.name == name)
            return f.format;
    return std::nullopt;
}

std::string serverFormatNames()
{
    std::string s;
    for (const FormatName &f : kFormats)
        s += (s.empty() ? "" : ", ") + std::string(f.name);
    return s;
}

ExportedConfig exportConfig(const BatchingConfig &config, ServerFormat format)
{
    const FormatName &f = kFormats[std::size_t(format)];
    Writer w(config);
    switch (format) {
    case ServerFormat::Triton: triton(w); break;
    case ServerFormat::Vllm: vllm(w); break;
    case ServerFormat::Tgi: tgi(w); break;
    case ServerFormat::TorchServe: torchserve(w); break;
    case ServerFormat::RayServe: rayServe(w); break;
    case ServerFormat::LlamaCpp: llamacpp(w); break;
    case ServerFormat::Ollama: ollama(w); break;
    }

    ExportedConfig out;
    out.text = "# " + std::string(f.title) + ", exported by BatchPilot from a config with policy " +
               std::string(policyName(config.policy)) + "\n# Reference: " + std::string(f.reference) +
               "\n# The mapping, field by field: docs/export.md\n";
    out.text += w.body;
    std::string rest;
    for (const Knob &k : knobs()) {
        if (w.used.count(k.key)) {
            out.mapped.emplace_back(k.key);
            continue;
        }
        out.unmapped.emplace_back(k.key);
        const auto h = w.hints.find(k.key);
        rest += "#   " + std::string(k.key) + " = " + formatKnobValue(k, config) +
                (k.appliesTo(config.policy)
                     ? ""
                     : " (unused by policy " + std::string(policyName(config.policy)) + ")") +
                ": " + (h != w.hints.end() ? h->second : std::string(k.doc)) + "\n";
    }
    if (!rest.empty())
        out.text += "\n# No " + std::string(f.name) +
                    " equivalent (BatchPilot knob = value: why, or what it does):\n" + rest;
    return out;
}

} // namespace bp
