// What the probe's rounds show of a server of unknown kind, read from its
// requests' timings alone (no /metrics series):
//
//  - iteration- or request-level: in the mixed round, does a new prompt's
//    first token come while the running streams still generate (iteration
//    level: it joined them), or only once they end (request level)?
//  - its running cap: in the widest decode round (all sent at once), how
//    many got their first token before the first of them finished; fewer
//    than were sent means the rest waited for a place;
//  - whether prefill joins the decode steps: while a mixed-round prompt is
//    prefilled, do the streams keep producing tokens (joins), or stall for
//    the whole prefill (runs alone)?
//  - whether TPOT grows with concurrency (the decode rounds' median gaps).
//
// Each finding says from which round and how sure it is. A plan without a
// streaming mixed round (oip, --quick without streams) cannot tell the
// scheduling level: then nothing is inferred and a simulation refuses.
#pragma once

#include "engine/sim/calibration/remote_calibration.h"

#include <optional>
#include <string>
#include <vector>

namespace bp {

struct InferredScheduler {
    std::optional<bool> iterationLevel; // nullopt: the rounds cannot tell
    std::optional<int> runningCap;      // nullopt: no cap seen up to the widest round
    std::optional<bool> prefillJoins;   // prefill rides with decodes
    std::optional<double> tpotGrowth;   // median gap at the widest decode round / at 1
    int widestRound = 0;                // requests sent at once in the widest decode round
    std::vector<std::string> evidence;  // one line per finding: what, from which round, how sure
};

InferredScheduler inferScheduler(const std::vector<ProbeRequest> &requests);

// The settings a calibration keeps for it: server "" (unknown), settings
// {"inferred": {...}}, and the BatchPilot knobs of the generic scheduler
// simulated: policy continuous with max_num_seqs = the cap (the widest round
// when none was seen) for an iteration-level server, policy dynamic with
// max_batch_size = the cap for a request-level one; no knobs when the
// level is unknown. The evidence lines are its notes.
ServerSettings inferredSettings(const InferredScheduler &inferred);

// True when `settings` hold an inferred generic scheduler to simulate.
bool hasInferredScheduler(const ServerSettings &settings);

} // namespace bp
