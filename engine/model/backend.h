// A model the engine runs batches on.
//
// Threading: run() is called concurrently from every executor thread (one
// per model instance). Implementations keep per-call state on the stack and
// treat weights as read-only.
#pragma once

#include "engine/core/request.h"
#include "engine/core/result.h"
#include "engine/core/tokenizer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bp {

// What the model accepts; a scheduler's admit() checks every request against it.
struct ModelLimits {
    int maxSequenceLength = 1024;
    int vocabSize = 256;
};

struct ModelInfo {
    std::string name; // "builtin:echo", "builtin:tiny-decoder", "/path/model.pt"
    std::string device = "cpu";
    std::string dtype = "float32"; // of the weights and activations: float32, bfloat16, float16
    // What the model is, beside its name: "LlamaForCausalLM" for a Hugging
    // Face folder, "GPT-2" for builtin:tiny-decoder; empty when unknown.
    std::string architecture;
    // The model's text codec (a Hugging Face tokenizer.json); nullptr: the
    // byte tokenizer the built-in models read. tokenizerOf() gives either.
    std::shared_ptr<const TextTokenizer> tokenizer;
    // Bytes one token's keys and values take over all layers (decoders with a
    // KV cache; 0 otherwise).
    std::int64_t kvBytesPerToken = 0;
    int vocabSize = 256;
    int maxSequenceLength = 1024;
    bool generative = false;   // produces tokens up to max_new_tokens
    int maxNewTokensLimit = 0; // largest max_new_tokens accepted (generative only)
    std::int64_t parameters = 0;
    std::string description;
    // A mixture-of-experts model: experts per MoE layer, how many each token
    // is routed to, and its MoE layers (0 for a dense model).
    int experts = 0;
    int expertsPerToken = 0;
    int moeLayers = 0;

    ModelLimits limits() const { return {maxSequenceLength, vocabSize}; }
};

// `model`'s tokenizer, or the byte tokenizer when it has none.
inline const TextTokenizer &tokenizerOf(const ModelInfo &model)
{
    return model.tokenizer ? *model.tokenizer : ByteTokenizer::instance();
}

// One request's part of a batch result.
struct SequenceResult {
    Status status;
    std::vector<float> values;
    std::vector<TokenId> tokens;
    Duration firstTokenAfter{}; // from the start of run() to this sequence's first token
    Duration lastTokenAfter{};  // from the start of run() to its last token (generative; 0 = unknown)
};

struct BatchInput {
    std::vector<const Request *> requests; // in batch order
    int paddedLength = 0;                  // >= every request's length
};

// A KV block a step asks the model to keep (prefix caching): the keys and
// values of the sequence's context positions [start, start + tokens), under
// `hash` (engine/sched/prefix_cache.h).
struct KvBlock {
    std::uint64_t hash = 0;
    std::int64_t start = 0;
    std::int64_t tokens = 0;
};

// Iteration-level generation (policy `continuous`). The backend keeps each
// live sequence's KV cache between steps, keyed by an id the scheduler chooses.
struct StepItem {
    std::uint64_t sequence = 0;  // live-sequence id (unique while live)
    std::vector<TokenId> tokens; // tokens to append now: a prompt chunk (prefill)
                                 // or the previously sampled token (decode)
    bool sample = true;          // return the next token after these; false for a
                                 // non-final prefill chunk
    // Prefix caching (StepModel::cachesPrefixes()). On a sequence's first
    // item only: the kept blocks its context starts with, in order; the
    // model starts the sequence from their keys and values (as if it had
    // been fed their tokens) and `tokens` follow them.
    std::vector<std::uint64_t> prefix = {};
    // Blocks of this sequence that are complete once `tokens` are appended:
    // after a successful step the model keeps them (their keys and values
    // outlive the sequence) until dropBlocks(). A hash it keeps already is
    // kept as it is.
    std::vector<KvBlock> publish = {};
    // Tests and tools: return the next-token logits too (StepOutcome::logits;
    // a paged model then runs the step eagerly). Models without logits ignore it.
    bool logits = false;
    // A server model's split of the step into forward passes (llama.cpp's
    // ubatches): `tokens` in order as (pass index, how many) pieces; empty:
    // all of them in pass 0. The simulator's cost model charges each pass
    // as an iteration of its own; a real model runs the step as one and
    // ignores it.
    struct PassPiece {
        int pass = 0;
        std::int64_t tokens = 0;
        // The KV cells each of these tokens attends to (0: its own context
        // so far): llama.cpp computes a pass over the largest of its slots'
        // KV views, padded to 256 cells.
        std::int64_t kvCells = 0;
    };
    std::vector<PassPiece> passes = {};
    // A server model's copy of KV cells out of its cache before this step
    // (llama-server saves each idle slot's KV into its RAM prompt cache when
    // a task starts, on the loop's thread). The simulator's cost model
    // charges them by a term of their own (s8, which a remote calibration
    // fits); a real model ignores it.
    std::int64_t copiedCells = 0;
};

// The KV cache a step model keeps, as its scheduler must book it: a paged
// model holds keys and values in a fixed pool of blocks (engine/model/
// kv_block_pool.h), so a sequence of n tokens holds ceil(n / blockTokens)
// blocks and "KV full" means the pool is full.
struct KvPoolInfo {
    std::int64_t capacityTokens = 0; // 0: no fixed pool (the cache grows as needed)
    int blockTokens = 1;             // held in blocks of this many token slots
};

// What an engine asks of a model's KV cache when it starts on it
// (Backend::prepareKv): continuous.kv_cache_tokens, continuous.kv_memory_fraction
// and prefix_cache.block_tokens.
struct KvPoolRequest {
    std::int64_t tokens = 0;     // > 0: this many slots (rounded down to whole blocks); 0: from memory
    double memoryFraction = 0.9; // of the device's free memory, when tokens is 0
    int blockTokens = 16;
    // The most sequences the engine keeps at once (0: not known). On the
    // CPU at tokens 0 the pool holds no more than they can use: this many
    // sequences of the model's full length.
    int sequences = 0;
    bool operator==(const KvPoolRequest &) const = default;
};

struct StepOutcome {
    Status status;             // per sequence
    TokenId next = 0;          // greedy next token when sample && status.isOk()
    std::vector<float> logits; // with StepItem::logits (and sample): the row next was taken from
};

class StepModel {
public:
    virtual ~StepModel() = default;
    // One iteration over `items` (each sequence at most once per call). An id
    // not seen before starts a sequence; a known id continues it. out is
    // resized to items.size(). A non-OK return fails the whole step.
    // Thread-safety: concurrent calls are allowed for disjoint sequence sets.
    virtual Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) = 0;
    // Frees a sequence's KV cache (finished, cancelled, preempted). Unknown ids are ignored.
    virtual void release(std::uint64_t sequence) = 0;
    // Tokens currently held in KV caches over all live sequences.
    virtual std::int64_t cachedTokens() const = 0;
    // Prefix caching: whether the model follows StepItem::prefix and
    // ::publish (the scheduler caches prefixes only on such a model).
    virtual bool cachesPrefixes() const { return false; }
    // Forgets kept blocks (evicted from the scheduler's prefix cache).
    // Unknown hashes are ignored. Never called for a block a step in flight
    // starts from.
    virtual void dropBlocks(const std::vector<std::uint64_t> & /*hashes*/) {}
    // The pool the scheduler books KV against (default: none, token by token).
    virtual KvPoolInfo kvPool() { return {}; }
};

// step()'s precondition, for implementations to check first: InvalidArgument
// naming the first sequence that appears twice in `items`.
Status checkDistinctSequences(const std::vector<StepItem> &items);

class Backend {
public:
    virtual ~Backend() = default;
    virtual const ModelInfo &info() const = 0;
    // Fills out[i] for requests[i]; out is resized by the caller. A non-OK
    // return fails the whole batch with that status (e.g. ResourceExhausted).
    virtual Status run(const BatchInput &input, std::vector<SequenceResult> &out) = 0;
    // Memory probe, for devices where memory is the limit (CUDA): the
    // largest batch of `paddedLength`-token sequences that runs without an
    // out-of-memory error, found by trying. nullopt = no limit known (CPU).
    virtual std::optional<int> probeMaxBatch(int /*paddedLength*/, int /*upTo*/) { return std::nullopt; }
    // Step-level generation (policy `continuous`); nullptr when the model has
    // none. The returned object lives as long as the backend.
    virtual StepModel *steps() { return nullptr; }
    // Sizes the model's KV cache for an engine about to start on it (paged
    // decoders; a no-op elsewhere). Unavailable when the cache is in
    // use and a different size is asked for (the one in use stays);
    // ResourceExhausted when it does not fit.
    virtual Status prepareKv(const KvPoolRequest & /*request*/) { return Status::ok(); }
    // Lines for a start-up log: the KV cache, CUDA graphs (empty by default).
    virtual std::vector<std::string> notes() const { return {}; }
    // A mixture-of-experts model: the distinct experts its MoE layers have
    // run since it was loaded, summed over layers and steps (a step whose
    // tokens went to 5 experts in each of 2 layers adds 10). -1 for a model
    // without experts.
    virtual std::int64_t expertsTouched() const { return -1; }
};

// builtin:echo — no compute: returns the input tokens (or the first
// max_new_tokens of them). Measures the serving path alone.
std::shared_ptr<Backend> makeEchoBackend(int vocabSize = 256, int maxSequenceLength = 8192);

} // namespace bp
