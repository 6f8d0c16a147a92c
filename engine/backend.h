// A model the engine runs batches on.
//
// Threading: run() is called concurrently from every executor thread (one
// per model instance). Implementations keep per-call state on the stack and
// treat weights as read-only.
#pragma once

#include "batcher.h"
#include "request.h"
#include "result.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bp {

struct ModelInfo {
    std::string name;        // "builtin:echo", "builtin:tiny-decoder", "/path/model.pt"
    std::string device = "cpu";
    int vocabSize = 256;
    int maxSequenceLength = 1024;
    bool generative = false;   // produces tokens up to max_new_tokens
    int maxNewTokensLimit = 0; // largest max_new_tokens accepted (generative only)
    std::int64_t parameters = 0;
    std::string description;

    ModelLimits limits() const { return {maxSequenceLength, vocabSize}; }
};

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
};

// builtin:echo — no compute: returns the input tokens (or the first
// max_new_tokens of them). Measures the serving path alone.
std::shared_ptr<Backend> makeEchoBackend(int vocabSize = 256, int maxSequenceLength = 8192);

} // namespace bp
