// What a replay sends, worked out once from its source and options: the
// arrivals (scaled and clamped by the one length rule, engine/core/length_rule.h), the config it runs under,
// and the parameters stored with the new session. Shared by the Replayer (real and virtual clock) and the
// simulated replay (engine/sim/).
#pragma once

#include "replayer.h"

#include "engine/core/length_rule.h"
#include "engine/workload/trace_csv.h"

#include <vector>

namespace bp {

// One arrival as the replay sends it.
struct PlannedRequest {
    Duration offset{}; // scaled by speed; a follow-up turn's is only its recorded time
    double sourceS = 0;
    int inputTokens = 1; // a follow-up turn: its new user text (the prompt adds the context)
    int maxNewTokens = 0;
    // The trace's prefix blocks (hash ids), ReplayPlan::blockTokens each:
    // replayed as the same token ids for the same id (prefix_tokens.h).
    PrefixBlocks blocks{};
    // Multi-turn: the conversation and turn, and the plan indices of the
    // previous and next turn (-1: none). A request with a previous turn is
    // sent `think` after that turn's answer completes (closed loop), its
    // prompt the previous prompt + answer + its own new text; one whose
    // previous turn is outside the replayed window starts open loop at its
    // offset.
    std::int64_t conversation = 0;
    int turn = 0;
    Duration think{};
    std::ptrdiff_t previous = -1;
    std::ptrdiff_t next = -1;
    bool followUp() const { return previous >= 0; }
};

struct ReplayPlan {
    std::vector<PlannedRequest> requests;
    int blockTokens = 0;   // tokens per hash id (0: no blocks)
    BatchingConfig config; // validated
    LengthCounts lengths;  // engine/core/length_rule.h: outputs raised, requests clamped
    bool fromSession = true;
};

// The length rule's limits for a replay on `model` (engine/core/length_rule.h):
// its length when options.clampToModel, its output cap.
LengthLimits replayLengthLimits(const ReplayOptions &options, const ModelInfo &model);

// NotFound for an unknown source, InvalidArgument for bad options, an
// invalid config or an empty source.
Result<ReplayPlan> planReplay(const TraceStore &store, const ReplayOptions &options, const ModelInfo &model);

// The new session's row: kind "replay", its source, and `sessions.replay`
// (the parameters, `clock`, the config).
SessionStart replaySessionStart(const ReplayOptions &options, const ReplayPlan &plan);

} // namespace bp
