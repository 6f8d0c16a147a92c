// The budget every iteration-level scheduler spends each step: how many
// sequences run, how many tokens a step carries, whether a long prompt is fed
// in chunks beside decodes, and the KV-cache budget. BatchPilot's continuous
// policy (ContinuousConfig) and vLLM's scheduler model (VllmKnobs) carry the
// same four knobs under the same names: both are a StepBudget with their own
// defaults and the knobs only they have.
#pragma once

#include <cstdint>

namespace bp {

struct StepBudget {
    int maxNumSeqs = 0;             // running sequences
    int maxNumBatchedTokens = 0;    // tokens per step (prefill + decode)
    bool chunkedPrefill = true;     // feed long prompts in chunks beside decodes
    std::int64_t kvCacheTokens = 0; // KV-cache budget in tokens; 0 = unlimited
    bool operator==(const StepBudget &) const = default;
};

} // namespace bp
