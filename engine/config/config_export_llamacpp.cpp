// export-config for llama.cpp: llama-server's launch flags, and Ollama's
// environment (Ollama runs llama.cpp's server under its own scheduler).
// The flags are the knob table's server.llamacpp rows (Knob::flag); the
// rows that stand for one of BatchPilot's knobs (Knob::ours) carry its
// value, so that import-config reads the line back to the same knobs.
#include "config_export_writer.h"

#include <algorithm>

namespace bp::exporting {

namespace {

// What llama-server would run for `c`: a config that simulates llama-server
// (server.kind llamacpp, as tune --target picks) its own knobs; any other
// config BatchPilot's continuous knobs through the rows that stand for them,
// the other rows at their values (the server's defaults unless set). A KV
// budget of 0 (unlimited) leaves n_ctx unwritten (`ctxWritten`).
struct LlamaLine {
    BatchingConfig config; // server.llamacpp filled as described
    bool ours = false;     // the values came from BatchPilot's knobs
    bool ctxWritten = true;
};

LlamaLine llamaLine(const BatchingConfig &c)
{
    LlamaLine out{c, c.server.kind != ServerKind::LlamaCpp, true};
    if (!out.ours)
        return out;
    LlamaCppKnobs &k = out.config.server.llamacpp;
    for (const Knob &row : serverKnobs(ServerKind::LlamaCpp)) {
        if (row.ours.empty())
            continue;
        const double v = findKnob(row.ours)->get(c);
        if (v <= 0) { // continuous.kv_cache_tokens 0: no budget to write
            out.ctxWritten = false;
            continue;
        }
        row.set(out.config, v);
    }
    // BatchPilot's KV budget is one pool for every sequence: llama-server's
    // unified cache. A pass inside a decode is at most the decode.
    k.kvUnified = true;
    k.nUbatch = std::min(k.nUbatch, k.nBatch);
    return out;
}

// The knobs every llama.cpp format explains the same way.
void llamaHints(Writer &w, std::string_view server)
{
    const std::string s(server);
    w.hint("max_queue_delay_us",
           s + " gives a free slot to a waiting request at its next turn: no queue delay");
    w.hint("instances", s + " runs one model per process: run more behind a load balancer");
    w.hint("cache.enabled",
           s + " has no response cache (cache_prompt reuses a prompt prefix's KV, not answers)");
    w.hint("priority_aging_us", s + " has no request priorities");
    w.hint("continuous.decode_first",
           "llama-server puts every generating slot's token in the batch first, then prompt chunks");
    delayHints(w, s);
}

// policy and chunked prefill: llama-server always batches per turn and
// continues a prompt that does not fit n_batch in the next turn.
void continuousShape(Writer &w)
{
    if (w.c.policy == PolicyKind::Continuous) {
        w.line("# policy continuous: a slot takes a waiting request at the next turn of the server's loop");
        w.use({"policy"});
    } else
        w.hint("policy",
               "llama-server batches at the iteration level: the line reads back as policy continuous");
    if (w.c.continuous.chunkedPrefill) {
        w.line("# continuous.chunked_prefill on: the server continues a prompt that does not fit its batch "
               "in the next turn");
        w.use({"continuous.chunked_prefill"});
    } else
        w.hint("continuous.chunked_prefill",
               "llama-server always continues a prompt that does not fit n_batch in the next turn");
}

} // namespace

void llamacpp(Writer &w)
{
    const LlamaLine line = llamaLine(w.c);
    std::vector<std::string> flags, notes;
    for (const Knob &k : serverKnobs(ServerKind::LlamaCpp)) {
        if (k.flag.empty() || !knobIsSet(k, line.config))
            continue;
        if (line.ours && !k.ours.empty() && !line.ctxWritten && k.ours == "continuous.kv_cache_tokens") {
            notes.push_back("--" + std::string(k.flag) + ": not set (" + std::string(k.ours) +
                            " = 0: unlimited; the server then takes the model's training context)");
            w.hint(k.ours, "0 = unlimited: llama-server's -c 0 takes the model's training context");
            continue;
        }
        const std::string flag = "--" + std::string(k.flag);
        std::string written;
        if (k.type == KnobType::Bool)
            written = k.get(line.config) != 0 ? flag : "--no-" + std::string(k.flag);
        else
            written = flag + " " + formatKnobValue(k, line.config);
        flags.push_back(written);
        const bool fromOurs = line.ours && !k.ours.empty();
        notes.push_back(written + " <- " + (fromOurs ? std::string(k.ours) : std::string(k.key)));
        if (fromOurs)
            w.use({k.ours});
    }
    if (!line.ours) {
        for (const Knob &k : serverKnobs(ServerKind::LlamaCpp))
            if (!k.ours.empty())
                w.hint(k.ours,
                       "the config simulates llama-server: its " + std::string(k.key) + " is written");
    }
    if (line.ours)
        notes.push_back("--kv-unified: BatchPilot's KV budget is one pool for all sequences");
    continuousShape(w);
    w.hint("queue_capacity", "llama-server's deferred queue is unbounded");
    w.hint("continuous.prefill_chunk",
           "llama-server's prompt chunk is what is left of --batch-size in a turn");
    for (const std::string &n : notes)
        w.line("# " + n);
    std::string cmd = "llama-server -m \"$MODEL\" --metrics";
    for (const std::string &f : flags)
        cmd += " \\\n  " + f;
    w.line(cmd);
    llamaHints(w, "llama-server");
}

void ollama(Writer &w)
{
    const LlamaLine line = llamaLine(w.c);
    const LlamaCppKnobs &k = line.config.server.llamacpp;
    const Knob &slots = *findKnob("server.llamacpp.n_parallel");
    const Knob &ctx = *findKnob("server.llamacpp.n_ctx");
    w.line("# OLLAMA_NUM_PARALLEL <- " + std::string(line.ours ? slots.ours : slots.key) +
           " (requests generating at once)");
    w.line("OLLAMA_NUM_PARALLEL=" + std::to_string(k.nParallel));
    if (line.ours)
        w.use({slots.ours});
    else
        w.hint(slots.ours, "the config simulates llama-server: its n_parallel is written");
    // Ollama gives every parallel request its own context of
    // OLLAMA_CONTEXT_LENGTH tokens (its runner's cache is that × the slots).
    const int perSlot = k.nCtx / std::max(1, k.nParallel);
    if (!line.ctxWritten) {
        w.line("# OLLAMA_CONTEXT_LENGTH: not set (" + std::string(ctx.ours) +
               " = 0: unlimited; Ollama then picks its default)");
        w.hint(ctx.ours, "0 = unlimited: Ollama then picks its default context");
    } else {
        w.line("# OLLAMA_CONTEXT_LENGTH <- " + std::string(line.ours ? ctx.ours : ctx.key) + " (" +
               std::to_string(k.nCtx) + ") / OLLAMA_NUM_PARALLEL: each request's context");
        w.line("OLLAMA_CONTEXT_LENGTH=" + std::to_string(perSlot));
        if (line.ours && perSlot * k.nParallel == k.nCtx)
            w.use({ctx.ours});
        else if (line.ours)
            w.hint(ctx.ours,
                   "not a multiple of the slots: " + std::to_string(perSlot) + " tokens each written");
    }
    if (!line.ours)
        w.hint("continuous.max_num_batched_tokens", "the config simulates llama-server: see server.llamacpp");
    else
        w.hint("continuous.max_num_batched_tokens",
               "Ollama sets the batch per model (its num_batch option), not in its environment");
    continuousShape(w);
    w.hint("queue_capacity",
           "OLLAMA_MAX_QUEUE bounds the requests Ollama has not yet handed to a runner; the model's "
           "deferred queue is llama-server's, which is unbounded: not written");
    w.hint("continuous.prefill_chunk", "Ollama's prompt chunk is its batch (num_batch)");
    llamaHints(w, "Ollama");
}

} // namespace bp::exporting
