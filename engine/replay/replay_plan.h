// What a replay sends, worked out once from its source and options: the
// arrivals (scaled, clamped to the model), the config it runs under, and
// the parameters stored with the new session. Shared by the Replayer (real
// and virtual clock) and the simulated replay (engine/sim/).
#pragma once

#include "replayer.h"

#include <vector>

namespace bp {

// One arrival as the replay sends it.
struct PlannedRequest {
    Duration offset{}; // scaled by speed
    double sourceS = 0;
    int inputTokens = 1;
    int maxNewTokens = 0;
};

struct ReplayPlan {
    std::vector<PlannedRequest> requests;
    BatchingConfig config; // validated
    std::size_t clamped = 0;
    bool fromSession = true;
};

// NotFound for an unknown source, InvalidArgument for bad options, an
// invalid config or an empty source.
Result<ReplayPlan> planReplay(const TraceStore &store, const ReplayOptions &options, const ModelInfo &model);

// The new session's row: kind "replay", its source, and `sessions.replay`
// (the parameters, `clock`, the config).
SessionStart replaySessionStart(const ReplayOptions &options, const ReplayPlan &plan);

} // namespace bp
