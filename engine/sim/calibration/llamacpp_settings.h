// llama.cpp's llama-server settings, as it publishes them
// (tools/server/server-context.cpp get_res_props, server_slot::to_json):
//
//   GET /props   total_slots (-np), default_generation_settings.n_ctx (a
//                slot's context), build_info, model_path
//   GET /slots   one entry per slot: id, n_ctx, is_processing (only with
//                --slots, on by default)
//
// The KV cache of all slots, n_ctx, is a slot's context × the slots. The
// server does not publish n_batch, n_ubatch, --cache-reuse or whether the
// KV cache is unified (-kvu): their defaults stand (2048, 512, 0) and the
// slots are modelled with separate caches, each of a slot's context — the
// same context per slot either way, only not shared. A note says so.
#pragma once

#include "engine/sim/calibration/remote_settings.h"

#include <string_view>

namespace bp {

// True when `props` is llama-server's GET /props (it has total_slots and
// default_generation_settings): what recognises a server whose /metrics
// is off.
bool isLlamaCppProps(const nlohmann::json &props);

// From GET /props, and GET /slots when given. InvalidArgument when `props`
// is not llama-server's.
Result<ServerSettings> llamacppSettings(const nlohmann::json &props, const nlohmann::json *slotList);

} // namespace bp

namespace bp {

// True when `text` is a llama-server command line (a `llama-server` word)
// or an Ollama environment (OLLAMA_NUM_PARALLEL=, OLLAMA_CONTEXT_LENGTH=,
// OLLAMA_MAX_QUEUE=).
bool looksLikeLlamaCppCommand(std::string_view text);

// The settings a llama-server command line sets, read by import-config's
// reader (config_import.h, format llamacpp; the flags are the knob table's
// server.llamacpp rows): -np/--parallel, -c/--ctx-size, -b/--batch-size,
// -ub/--ubatch-size, -kvu/--kv-unified, -no-kvu/--no-kv-unified,
// --cache-reuse (other flags are kept as settings). Ollama's environment
// (format ollama) maps to the same: OLLAMA_NUM_PARALLEL the slots,
// OLLAMA_CONTEXT_LENGTH a slot's context (Ollama sizes the cache as slots ×
// context), OLLAMA_MAX_QUEUE kept, not modelled. InvalidArgument naming a
// flag without a whole number.
Result<ServerSettings> llamacppSettingsFromCommand(std::string_view text, const std::string &source);

} // namespace bp
