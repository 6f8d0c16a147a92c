// What a replay sends, worked out once from its source and options: the
// arrivals (scaled and clamped by the one length rule, engine/core/length_rule.h), the config it runs under,
// and the parameters stored with the new session. Shared by the Replayer (real and virtual clock) and the
// simulated replay (engine/sim/).
#pragma once

#include "replayer.h"

#include "engine/core/length_rule.h"
#include "engine/workload/arrival_plan.h"

#include <vector>

namespace bp {

struct ReplayPlan {
    std::vector<PlannedArrival> requests;
    int blockTokens = 0;   // tokens per hash id (0: no blocks); each arrival carries it too
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
