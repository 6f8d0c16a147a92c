#include "config_export.h"

#include "knobs.h"

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
};

// A knob by its last path component: "max_num_seqs" finds "max_num_seqs" or
// "continuous.max_num_seqs", whichever the table declares.
const Knob *knobNamed(std::string_view name)
{
    for (const Knob &k : knobs())
        if (k.key == name || (k.key.size() > name.size() && k.key.ends_with(name) &&
                              k.key[k.key.size() - name.size() - 1] == '.'))
            return &k;
    return nullptr;
}

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

// Collects the output and which knobs it used.
class Writer {
public:
    Writer(const BatchingConfig &c) : c(c) {}

    const BatchingConfig &c;
    std::string body;
    std::set<std::string, std::less<>> used;
    std::map<std::string, std::string, std::less<>> hints; // key -> why there is no equivalent

    void line(const std::string &s) { body += s + "\n"; }
    // Marks knobs as represented by the line(s) just written.
    void use(std::initializer_list<std::string_view> keys)
    {
        for (std::string_view k : keys)
            if (findKnob(k))
                used.emplace(k);
    }
    void hint(std::string_view key, std::string text) { hints[std::string(key)] = std::move(text); }
    std::string value(std::string_view key) const
    {
        const Knob *k = findKnob(key);
        return k ? formatKnobValue(*k, c) : "?";
    }
};

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

// How a format writes the batch: Triton tells the policy by its syntax
// (tritonPolicy), the others write one batch size for a request-level
// batcher that reads back as policy dynamic.
enum class BatchSyntax { Triton, SizeOnly };

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

void triton(Writer &w)
{
    const BatchingConfig &c = w.c;
    w.line("max_batch_size: " + std::to_string(largestBatch(c)) + "  # " + batchSource(c));
    useBatchKnobs(w, BatchSyntax::Triton);
    if (c.policy == PolicyKind::None) {
        w.line("# policy none: no dynamic_batching block, so Triton runs each request as it arrives");
    } else {
        w.line("dynamic_batching {");
        if (c.policy == PolicyKind::Static)
            w.line("  preferred_batch_size: [ " + std::to_string(c.staticBatchSize) +
                   " ]  # static_batch_size");
        else if (c.policy == PolicyKind::Hybrid)
            w.line("  preferred_batch_size: [ " + joinInts(c.hybrid.staticSizes, ", ") +
                   " ]  # hybrid.static_sizes");
        const long long delayUs =
            std::chrono::duration_cast<std::chrono::microseconds>(c.maxQueueDelay).count();
        w.line("  max_queue_delay_microseconds: " + std::to_string(delayUs) + "  # max_queue_delay_us");
        if (std::chrono::microseconds(delayUs) == c.maxQueueDelay)
            w.use({"max_queue_delay_us"});
        else
            w.hint("max_queue_delay_us",
                   "Triton counts whole microseconds: exported as " + std::to_string(delayUs));
        w.line(
            "  # priority_levels: not set. BatchPilot priorities are open-ended integers that age by one per "
            "priority_aging (" +
            w.value("priority_aging_us") +
            "); Triton's are levels 1..priority_levels without aging: set it to the number of priorities "
            "your clients send");
        w.line("  default_queue_policy {");
        w.line("    max_queue_size: " + std::to_string(c.queueCapacity) +
               "  # queue_capacity (full: rejected)");
        w.use({"queue_capacity"});
        w.line("  }");
        w.line("}");
    }
    w.hint("priority_aging_us", "Triton priorities do not age (see priority_levels above)");
    w.line("instance_group [");
    w.line("  {");
    w.line("    count: " + std::to_string(c.instances) + "  # instances");
    w.line("  }");
    w.line("]");
    w.use({"instances"});
    if (c.cache.enabled) {
        w.line("response_cache {");
        w.line("  enable: true  # cache.enabled");
        w.line("}");
        w.line("# cache.max_bytes = " + w.value("cache.max_bytes") +
               ": the cache size is the server's: tritonserver --cache-config local,size=" +
               std::to_string(c.cache.maxBytes));
        w.use({"cache.enabled"});
        w.hint("cache.max_bytes",
               "the cache size is the server's, not the model's: tritonserver --cache-config "
               "local,size=" +
                   std::to_string(c.cache.maxBytes));
        w.hint("cache.max_entries", "Triton's local cache is bounded in bytes only");
    }
    w.hint("bucket_edges", "Triton batches regardless of length (ragged batching aside): no length buckets");
    w.hint("static_padded_length", "padding is the model's in Triton");
    delayHints(w, "Triton");
}

// vLLM and TGI are continuous batchers: their knobs are sequences and tokens
// per step. The continuous knobs map one to one when the table has them.
struct Continuous {
    const Knob *maxSeqs = knobNamed("max_num_seqs");
    const Knob *batchedTokens = knobNamed("max_num_batched_tokens");
    const Knob *chunked = knobNamed("chunked_prefill");
    const Knob *kvTokens = knobNamed("kv_cache_tokens");
    Continuous()
    {
        if (!chunked)
            chunked = knobNamed("enable_chunked_prefill");
        if (!chunked)
            chunked = knobNamed("chunked_prefill.enabled");
    }
};

void shellCommand(Writer &w, const std::string &program, const std::vector<std::string> &flags)
{
    std::string cmd = program;
    for (const std::string &f : flags)
        cmd += " \\\n  " + f;
    w.line(cmd);
}

void vllm(Writer &w)
{
    const BatchingConfig &c = w.c;
    const Continuous k;
    std::vector<std::string> flags;
    std::vector<std::string> notes;
    if (k.maxSeqs) {
        flags.push_back("--max-num-seqs " + num(k.maxSeqs->get(c)));
        notes.push_back("--max-num-seqs <- " + std::string(k.maxSeqs->key));
        w.use({k.maxSeqs->key});
    } else {
        flags.push_back("--max-num-seqs " + std::to_string(largestBatch(c)));
        notes.push_back("--max-num-seqs <- " + batchSource(c) +
                        " (this build has no max_num_seqs knob: the request batch size stands in)");
        useBatchKnobs(w, BatchSyntax::SizeOnly);
    }
    if (k.batchedTokens) {
        flags.push_back("--max-num-batched-tokens " + num(k.batchedTokens->get(c)));
        notes.push_back("--max-num-batched-tokens <- " + std::string(k.batchedTokens->key));
        w.use({k.batchedTokens->key});
    } else {
        notes.push_back(
            "--max-num-batched-tokens: not set (vLLM's default): this build has no token-budget knob");
    }
    if (k.chunked) {
        const bool on = k.chunked->get(c) != 0;
        flags.push_back(on ? "--enable-chunked-prefill" : "--no-enable-chunked-prefill");
        notes.push_back(std::string(on ? "--enable-chunked-prefill" : "--no-enable-chunked-prefill") +
                        " <- " + std::string(k.chunked->key));
        w.use({k.chunked->key});
    } else {
        notes.push_back(
            "--enable-chunked-prefill: not set (vLLM's default): this build has no chunked-prefill knob");
    }
    if (k.kvTokens)
        w.hint(k.kvTokens->key, "vLLM sizes its KV cache from --gpu-memory-utilization, not in tokens");
    for (const std::string &n : notes)
        w.line("# " + n);
    shellCommand(w, "vllm serve \"$MODEL\"", flags);
    w.hint("max_queue_delay_us", "vLLM admits waiting sequences at every step: no queue delay");
    w.hint("queue_capacity", "vLLM's waiting queue is unbounded");
    w.hint("instances", "closest: --data-parallel-size (one engine replica per GPU group)");
    w.hint("cache.enabled",
           "vLLM has no response cache (--enable-prefix-caching reuses KV blocks, not answers)");
    w.hint("priority_aging_us", "vLLM --scheduling-policy priority orders by priority without aging");
    delayHints(w, "vLLM");
}

void tgi(Writer &w)
{
    const BatchingConfig &c = w.c;
    const Continuous k;
    std::vector<std::string> flags;
    std::vector<std::string> notes;
    if (k.maxSeqs) {
        flags.push_back("--max-batch-size " + num(k.maxSeqs->get(c)));
        notes.push_back("--max-batch-size <- " + std::string(k.maxSeqs->key));
        w.use({k.maxSeqs->key});
    } else {
        flags.push_back("--max-batch-size " + std::to_string(largestBatch(c)));
        notes.push_back("--max-batch-size <- " + batchSource(c) +
                        " (this build has no max_num_seqs knob: the request batch size stands in)");
        useBatchKnobs(w, BatchSyntax::SizeOnly);
    }
    if (k.batchedTokens) {
        flags.push_back("--max-batch-prefill-tokens " + num(k.batchedTokens->get(c)));
        notes.push_back("--max-batch-prefill-tokens <- " + std::string(k.batchedTokens->key));
        w.use({k.batchedTokens->key});
    } else {
        notes.push_back(
            "--max-batch-prefill-tokens: not set (TGI's default): this build has no token-budget knob");
    }
    if (k.kvTokens && k.kvTokens->get(c) > 0) {
        flags.push_back("--max-batch-total-tokens " + num(k.kvTokens->get(c)));
        notes.push_back("--max-batch-total-tokens <- " + std::string(k.kvTokens->key));
        w.use({k.kvTokens->key});
    } else if (k.kvTokens) {
        notes.push_back("--max-batch-total-tokens: not set (TGI infers it from free memory): " +
                        std::string(k.kvTokens->key) + " = 0 (unlimited)");
        w.hint(k.kvTokens->key, "0 = unlimited: TGI infers --max-batch-total-tokens from free memory");
    } else {
        notes.push_back(
            "--max-batch-total-tokens: not set (TGI infers it from free memory): this build has no "
            "KV-budget knob");
    }
    if (k.chunked)
        w.hint(k.chunked->key, "TGI chunks prefills on its own under --max-batch-prefill-tokens");
    flags.push_back("--max-concurrent-requests " + std::to_string(c.queueCapacity));
    notes.push_back(
        "--max-concurrent-requests <- queue_capacity (beyond it TGI refuses requests, as BatchPilot "
        "answers 429; TGI counts running requests too)");
    w.use({"queue_capacity"});
    notes.push_back("--waiting-served-ratio: not set (TGI's default): BatchPilot has no ratio of waiting to "
                    "running requests");
    notes.push_back("--max-waiting-tokens: not set (TGI's default): it counts decode steps, not time; "
                    "max_queue_delay = " +
                    w.value("max_queue_delay_us") + " is about that many steps of your model's decode time");
    for (const std::string &n : notes)
        w.line("# " + n);
    shellCommand(w, "text-generation-launcher --model-id \"$MODEL_ID\"", flags);
    w.hint("max_queue_delay_us", "see --max-waiting-tokens above");
    w.hint("instances", "TGI runs one router per model; shards (--num-shard) split one model, not replicas");
    w.hint("cache.enabled", "TGI has no response cache");
    w.hint("priority_aging_us", "TGI has no request priorities");
    delayHints(w, "TGI");
}

void torchserve(Writer &w)
{
    const BatchingConfig &c = w.c;
    const double delayMs = std::chrono::duration<double, std::milli>(c.maxQueueDelay).count();
    long long ms = std::llround(delayMs);
    if (ms == 0 && delayMs > 0)
        ms = 1; // 0 would mean no wait at all
    w.line("minWorkers: " + std::to_string(c.instances) + "  # instances");
    w.line("maxWorkers: " + std::to_string(c.instances) + "  # instances");
    w.use({"instances"});
    w.line("batchSize: " + std::to_string(largestBatch(c)) + "  # " + batchSource(c));
    useBatchKnobs(w, BatchSyntax::SizeOnly);
    std::string delayNote = "max_queue_delay_us = " + w.value("max_queue_delay_us");
    if (std::chrono::milliseconds(ms) != c.maxQueueDelay) {
        delayNote += ", rounded to whole milliseconds";
        w.hint("max_queue_delay_us",
               "TorchServe counts whole milliseconds: exported as " + std::to_string(ms) + " ms");
    } else {
        w.use({"max_queue_delay_us"});
    }
    w.line("maxBatchDelay: " + std::to_string(ms) + "  # " + delayNote);
    w.line("# queue_capacity = " + std::to_string(c.queueCapacity) +
           ": TorchServe's queue is server-wide, in config.properties: job_queue_size=" +
           std::to_string(c.queueCapacity));
    w.hint("queue_capacity", "TorchServe's queue is server-wide (config.properties job_queue_size=" +
                                 std::to_string(c.queueCapacity) + "), not a model-config.yaml key");
    w.hint("cache.enabled", "TorchServe has no response cache");
    w.hint("priority_aging_us", "TorchServe has no request priorities");
    delayHints(w, "TorchServe");
}

void rayServe(Writer &w)
{
    const BatchingConfig &c = w.c;
    const int batch = largestBatch(c);
    const double delayS = std::chrono::duration<double>(c.maxQueueDelay).count();
    w.line("from ray import serve");
    w.line("");
    w.line("");
    w.line("# num_replicas <- instances; max_queued_requests <- queue_capacity (full: rejected);");
    w.line("# max_ongoing_requests must be at least max_batch_size or batches never fill");
    w.line("@serve.deployment(num_replicas=" + std::to_string(c.instances) + ", max_queued_requests=" +
           std::to_string(c.queueCapacity) + ", max_ongoing_requests=" + std::to_string(batch) + ")");
    w.use({"instances", "queue_capacity"});
    w.line("class BatchedModel:");
    w.line("    # max_batch_size <- " + batchSource(c) + "; batch_wait_timeout_s <- max_queue_delay_us (" +
           w.value("max_queue_delay_us") + ")");
    w.line("    @serve.batch(max_batch_size=" + std::to_string(batch) +
           ", batch_wait_timeout_s=" + exactNum(delayS) + ")");
    useBatchKnobs(w, BatchSyntax::SizeOnly);
    w.use({"max_queue_delay_us"});
    w.line("    async def __call__(self, requests):");
    w.line("        ...  # run the model on the list of requests, return one result per request");
    w.hint("cache.enabled", "Ray Serve has no response cache");
    w.hint("priority_aging_us", "Ray Serve has no request priorities");
    delayHints(w, "Ray Serve");
}

} // namespace

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
