// One length rule for every path that turns a trace row into a request: the
// embedded replay, the simulation (replay --simulate, tune, plan, the
// Advisor), a remote replay over OIP, OpenAI completions or chat, and the
// fidelity bench's inputs.
//
//  1. Scale: input = max(1, round(in · s)); a generative model's output =
//     round(out · s), at least 1 when the source asked for any: an output
//     that scaled below one token is "raised" to 1. (A source row of 0
//     output tokens stays 0: builtin:echo answers it with its input.)
//  2. Cap the output at the model's (or the target's) max_new_tokens.
//  3. Clamp input and output together to the model's length L (prompt +
//     output <= L, as every scheduler admits them): the input gives way
//     first, down to one token, then the output (to L − 1). A model without
//     generation keeps input <= L.
//
// What changed is counted (LengthCounts) and printed by each summary, so no
// request is rejected for a length the rule could have made fit.
#pragma once

#include <cstddef>
#include <string>

namespace bp {

struct LengthLimits {
    int maxLength = 0;    // prompt + output at most (a non-generative model: the input); 0 = none
    int maxNewTokens = 0; // output at most; 0 = none
    bool generative = true;
};

struct ScaledLengths {
    int input = 1;
    int output = 0;
    bool raised = false;  // the output scaled below one token and was raised to 1
    bool clamped = false; // input or output cut to fit maxLength
};

ScaledLengths scaleLengths(int inputTokens, int outputTokens, double scale, const LengthLimits &limits);

// Clamps an already scaled request (a multi-turn follow-up whose prompt grew
// with the previous answers) to the rule's step 3.
ScaledLengths clampLengths(int inputTokens, int outputTokens, const LengthLimits &limits);

struct LengthCounts {
    std::size_t raised = 0, clamped = 0;
    void add(const ScaledLengths &s)
    {
        raised += s.raised ? 1 : 0;
        clamped += s.clamped ? 1 : 0;
    }
    // "12 outputs raised to 1 token, 3 requests clamped to 1024 tokens
    // (prompt + output)"; empty when nothing changed.
    std::string describe(int maxLength) const;
};

} // namespace bp
