// The inverse of export-config (config_export.h): a server's batching
// settings, read from the syntax export-config writes and operators write by
// hand, as the server's own settings and as the nearest BatchingConfig.
//
//   triton      config.pbtxt (protobuf text format), or the JSON Triton serves
//               at GET /v2/models/NAME/config (tritonFromJson)
//   vllm        a `vllm serve` command line (--max-num-seqs, --max-num-batched-tokens,
//               --[no-]enable-chunked-prefill, --num-gpu-blocks-override, ...)
//   tgi         a `text-generation-launcher` command line
//   torchserve  model-config.yaml (batchSize, maxBatchDelay, min/maxWorkers)
//   ray-serve   @serve.deployment(...) and @serve.batch(...) keyword arguments
//   llamacpp    a `llama-server` command line: -np/--parallel, -c/--ctx-size,
//               -b/--batch-size, -ub/--ubatch-size, -kvu/--kv-unified (and
//               --no-kv-unified), --cache-reuse (the knob table's
//               server.llamacpp rows); -np without -kvu gives each slot
//               n_ctx / n_parallel, as the server does
//   ollama      Ollama's environment: OLLAMA_NUM_PARALLEL (slots),
//               OLLAMA_CONTEXT_LENGTH (a request's context: n_ctx is it ×
//               the slots, not unified), OLLAMA_MAX_QUEUE (kept, not modelled)
//   Both set the server.llamacpp knobs (server.kind llamacpp) and the
//   BatchPilot knobs they stand for (continuous.max_num_seqs, ...).
//
// Every setting the file gives is kept under the server's own name
// (`settings`: snake_case flags, Triton's field paths, TorchServe's keys);
// those with a BatchPilot knob also set it (`knobs`). For every knob an export
// marks as mapped, import(export(config)) gives the config's value back
// (tests/engine/config/test_config_import.cpp checks every format and knob).
// Flags and fields BatchPilot does not model are kept and listed, never an
// error; malformed input is, with its line number ("line 7: ...").
#pragma once

#include "config_export.h"
#include "engine/core/batching_config.h"
#include "engine/core/result.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bp {

struct ImportedConfig {
    ServerFormat format = ServerFormat::Triton;
    BatchingConfig config;                              // the defaults where the file says nothing
    std::vector<std::string> knobs;                     // knob keys the file set, in the order read
    nlohmann::json settings = nlohmann::json::object(); // server name -> value, as read
    std::vector<std::string> notes;                     // what was read but not taken, and why
};

// The format a text is written in, from its content: OLLAMA_ variables, a
// `llama-server` command, a `vllm serve` or
// `text-generation-launcher` command, `@serve.` decorators, TorchServe's
// batchSize/maxBatchDelay keys, or Triton's fields; nullopt when none fits.
std::optional<ServerFormat> detectServerFormat(std::string_view text);

// InvalidArgument "line N: ..." on malformed input.
Result<ImportedConfig> importConfig(std::string_view text, ServerFormat format);

// Triton's model configuration as JSON (GET /v2/models/NAME/config: the
// ModelConfig protobuf with its field names), read like a config.pbtxt.
Result<ImportedConfig> tritonFromJson(const nlohmann::json &config);

// A setting's text as a value: a number, true/false (any case: Python's
// "True"), or the text itself.
nlohmann::json settingFromText(std::string_view text);

// The knobs `keys` of `config` as {key: value} (durations in µs, policies
// by name, lists as arrays), and back onto `base` (InvalidArgument naming a
// key that is not a knob or a value out of its range).
nlohmann::json knobValues(const BatchingConfig &config, const std::vector<std::string> &keys);
Result<BatchingConfig> applyKnobValues(const nlohmann::json &values, BatchingConfig base = {});

} // namespace bp
