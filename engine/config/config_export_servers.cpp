// One writer per server format: Triton's config.pbtxt, vLLM's and TGI's
// launch flags, TorchServe's model-config.yaml, Ray Serve's decorator
// (docs/export.md has the mapping, field by field).
#include "config_export_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bp::exporting {

namespace {

void shellCommand(Writer &w, const std::string &program, const std::vector<std::string> &flags)
{
    std::string cmd = program;
    for (const std::string &f : flags)
        cmd += " \\\n  " + f;
    w.line(cmd);
}

} // namespace

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
// per step. BatchPilot's continuous knobs map one to one, each written
// under the flag of the server's row that stands for it (Knob::ours).
struct Continuous {
    const Knob &maxSeqs = ours("continuous.max_num_seqs");
    const Knob &batchedTokens = ours("continuous.max_num_batched_tokens");
    const Knob &chunked = ours("continuous.chunked_prefill");
    const Knob &kvTokens = ours("continuous.kv_cache_tokens");
    static const Knob &ours(std::string_view key) { return *findKnob(key); }
};

// "--" + the flag of `server`'s row for BatchPilot's knob `key`.
std::string flagFor(ServerKind server, std::string_view key)
{
    return "--" + std::string(serverRowFor(server, key)->flag);
}

// The flag for `k` with its value, and the note that says where it came from.
void mapped(Writer &w, ServerKind server, const Knob &k, std::vector<std::string> &flags,
            std::vector<std::string> &notes)
{
    const std::string flag = flagFor(server, k.key);
    flags.push_back(flag + " " + num(k.get(w.c)));
    notes.push_back(flag + " <- " + std::string(k.key));
    w.use({k.key});
}

void vllm(Writer &w)
{
    const BatchingConfig &c = w.c;
    const Continuous k;
    std::vector<std::string> flags;
    std::vector<std::string> notes;
    mapped(w, ServerKind::Vllm, k.maxSeqs, flags, notes);
    mapped(w, ServerKind::Vllm, k.batchedTokens, flags, notes);
    const std::string chunked = flagFor(ServerKind::Vllm, k.chunked.key);
    const std::string onOff = k.chunked.get(c) != 0 ? chunked : "--no-" + chunked.substr(2);
    flags.push_back(onOff);
    notes.push_back(onOff + " <- " + std::string(k.chunked.key));
    w.use({k.chunked.key});
    w.hint(k.kvTokens.key, "vLLM sizes its KV cache from --gpu-memory-utilization, not in tokens");
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
    mapped(w, ServerKind::Tgi, k.maxSeqs, flags, notes);
    mapped(w, ServerKind::Tgi, k.batchedTokens, flags, notes);
    const std::string totalTokens = flagFor(ServerKind::Tgi, k.kvTokens.key);
    if (k.kvTokens.get(c) > 0) {
        mapped(w, ServerKind::Tgi, k.kvTokens, flags, notes);
    } else {
        notes.push_back(totalTokens + ": not set (TGI infers it from free memory): " +
                        std::string(k.kvTokens.key) + " = 0 (unlimited)");
        w.hint(k.kvTokens.key, "0 = unlimited: TGI infers " + totalTokens + " from free memory");
    }
    w.hint(k.chunked.key, "TGI chunks prefills on its own under --max-batch-prefill-tokens");
    const std::string concurrent = flagFor(ServerKind::Tgi, "queue_capacity");
    flags.push_back(concurrent + " " + std::to_string(c.queueCapacity));
    notes.push_back(concurrent + " <- queue_capacity (beyond it TGI refuses requests, as BatchPilot "
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

} // namespace bp::exporting
