// builtin:tiny-decoder — a GPT-2-style decoder (pre-LN blocks, causal
// attention, LM head tied to the token embedding) with seeded random weights
// and a KV cache. Sizes: model_presets.h (`gpt2` is GPT-2 small's shape).
//
// Backend::run generates greedily for every request in the batch:
//  - max_new_tokens = n > 0 asks for exactly n tokens (there is no EOS: the
//    weights are random, so generation always stops at n); 0 means 1 token,
//    the prefill's prediction. input + n must fit the model's positions,
//    else that request alone fails with OutOfRange.
//  - the KV cache is paged (paged_decoder.h): every request gets its blocks
//    up front; one prefill over all prompts (no padding: the layout is flat,
//    so BatchInput::paddedLength costs a decoder nothing), then one decode
//    step per further token over the members still generating — a member
//    with all its tokens leaves the batch at once;
//  - on CUDA, decode steps replay CUDA graphs captured per batch-size bucket;
//    the next tokens are the argmax on the device, one copy back per step;
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
    bool keepLogits = false; // return every step's next-token logits (float)
};

struct Generation {
    Status status;
    std::vector<TokenId> tokens;
    std::vector<std::vector<float>> logits; // [step][vocab], with keepLogits
    Duration firstTokenAfter{};
    Duration lastTokenAfter{};
};

// The decoder's own interface beyond Backend: generation with options, used
// by tests (KV cache vs recomputation) and tools.
class DecoderModel : public Backend {
public:
    // out is resized to the batch; a non-OK return fails the whole batch.
    virtual Status generate(const BatchInput &input, const GenerateOptions &options,
                            std::vector<Generation> &out) = 0;
};

// NotFound for an unknown preset; Unavailable / InvalidArgument for the device.
Result<std::shared_ptr<DecoderModel>> makeTinyDecoder(const ModelSpec &spec);

} // namespace bp
