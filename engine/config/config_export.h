// A BatchingConfig in the syntax of the servers an operator deploys to:
//   triton      config.pbtxt: max_batch_size, dynamic_batching { … }, instance_group, response_cache
//   vllm        `vllm serve` engine arguments (--max-num-seqs, --max-num-batched-tokens, chunked prefill)
//   tgi         `text-generation-launcher` flags (--max-batch-size, --max-batch-prefill-tokens,
//               --max-batch-total-tokens, --max-concurrent-requests; --waiting-served-ratio and
//               --max-waiting-tokens explained)
//   torchserve  model-config.yaml (batchSize, maxBatchDelay, min/maxWorkers)
//   ray-serve   @serve.deployment + @serve.batch(max_batch_size=…, batch_wait_timeout_s=…)
//   llamacpp    a `llama-server` command line (--parallel, --ctx-size, --batch-size,
//               --ubatch-size, --[no-]kv-unified, --cache-reuse: the knob table's
//               server.llamacpp rows)
//   ollama      Ollama's environment (OLLAMA_NUM_PARALLEL, OLLAMA_CONTEXT_LENGTH)
//
// Driven by the knob table (knobs.h): every knob appears in the output, either
// in a mapping comment next to the field it became, or in the closing "no
// equivalent" comment with its value — a knob added to the table shows up
// there without any change here. docs/export.md has the field-by-field
// mapping with each server's documentation.
#pragma once

#include "engine/core/batching_config.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bp {

enum class ServerFormat { Triton, Vllm, Tgi, TorchServe, RayServe, LlamaCpp, Ollama };

// "triton", "vllm", "tgi", "torchserve", "ray-serve", "llamacpp", "ollama"
std::string_view serverFormatName(ServerFormat format);
std::optional<ServerFormat> parseServerFormat(std::string_view name);
std::string serverFormatNames(); // "triton, vllm, tgi, torchserve, ray-serve, llamacpp, ollama"

struct ExportedConfig {
    std::string text;                  // the file / command, comments included
    std::vector<std::string> mapped;   // knob keys that became a field or flag
    std::vector<std::string> unmapped; // knob keys listed as having no equivalent
};

// The policy a Triton config.pbtxt reads as (import-config): no
// dynamic_batching block = none; no preferred sizes = dynamic; one preferred
// size equal to max_batch_size = static; other preferred sizes = hybrid.
// The export marks `policy` as mapped only when its output reads back so.
PolicyKind tritonPolicy(bool dynamicBatching, const std::vector<int> &preferredBatchSizes, int maxBatchSize);

// `mapped` lists the knobs whose values the written fields carry exactly
// (import-config gives them back: tests/engine/config/test_config_import.cpp); a
// knob the format can only approximate (a delay rounded to its unit, a batch
// size capped by memory_batch_limit, a policy the syntax cannot tell) is in
// `unmapped`, with why.
// `config` should be valid (validate()); the export does not re-check it.
ExportedConfig exportConfig(const BatchingConfig &config, ServerFormat format);

} // namespace bp
