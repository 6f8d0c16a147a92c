// builtin:tiny-decoder — a GPT-2-style decoder (pre-LN blocks, causal
// attention, LM head tied to the token embedding) with seeded random weights
// and a KV cache. Sizes: model_presets.h (`gpt2` is GPT-2 small's shape).
//
// Backend::run generates greedily for every request in the batch:
//  - max_new_tokens = n > 0 asks for exactly n tokens (there is no EOS: the
//    weights are random, so generation always stops at n); 0 means 1 token,
//    the prefill's prediction. input + n must fit the model's positions,
//    else that request alone fails with OutOfRange.
//  - one batched prefill over the left-padded batch (padded to
//    BatchInput::paddedLength, the shape the policy chose), then one batched
//    decode step per further token, reading and extending the KV cache;
//  - a member that has all its tokens leaves the batch: the cache and the
//    step tensors are compacted to the still-running rows, so finished
//    members stop costing compute;
//  - SequenceResult::tokens holds the generated ids, firstTokenAfter the time
//    from the start of run() to the prefill's token (the engine adds the
//    queue wait to get time to first token), lastTokenAfter the time to the
//    member's last token (time per output token = (last - first) / (n - 1)).
//  - Request::onToken, when set, is called for every token as it is ready
//    (TokenEvent::at from the steady clock, the engine's clock outside
//    fake-clock tests).
//  - steps() gives step-level generation (trunk_steps.h).
//
// Threading: run() and generate() may be called concurrently; weights are
// read-only, all per-call state is local.
#pragma once

#include "engine/model/backend.h"
#include "engine/model/model_registry.h"

namespace bp {

struct GenerateOptions {
    bool useKvCache = true;  // false: recompute the whole sequence every step (the reference)
    bool compact = true;     // drop finished members from the batch (KV-cache mode)
    bool keepLogits = false; // return every step's next-token logits
};

struct Generation {
    Status status;
    std::vector<TokenId> tokens;
    std::vector<std::vector<float>> logits; // [step][vocab], with keepLogits
    Duration firstTokenAfter{};
    Duration lastTokenAfter{};
};

// The decoder's own interface beyond Backend: generation with options, used
// by tests (KV cache vs recomputation, compaction) and tools.
class DecoderModel : public Backend {
public:
    // out is resized to the batch; a non-OK return fails the whole batch.
    virtual Status generate(const BatchInput &input, const GenerateOptions &options,
                            std::vector<Generation> &out) = 0;
};

// NotFound for an unknown preset; Unavailable / InvalidArgument for the device.
Result<std::shared_ptr<DecoderModel>> makeTinyDecoder(const ModelSpec &spec);

} // namespace bp
