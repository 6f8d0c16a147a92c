// The parts of `batchpilot replay` (cmd_replay.cpp) that its printer
// (cmd_replay_print.cpp) shares.
#pragma once

#include "command_args.h"

#include "remote/http_remote_target.h"

#include "engine/replay/replayer.h"
#include "engine/sim/calibration/calibration.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/store/session_summary.h"

#include <QTextStream>

#include <memory>
#include <optional>
#include <string>

namespace bp::app::replay_command {

// The flags checked before anything is opened.
struct ReplayFlags {
    qint64 id = 0;
    double speed = 1, lengthScale = 1, limit = 0, compare = 0, replicas = 1;
    CostNoise noise{};
    RouterPolicy router{};
    bool simulate = false;
};

// What serves the replay: a simulation (its calibration, no model), a
// remote target, or the embedded engine on a loaded model.
struct Driver {
    std::unique_ptr<remote::HttpRemoteTarget> target;
    std::shared_ptr<Backend> backend;
    std::optional<Calibration> calibration;
    std::string serverModel; // the server model a remote calibration simulates, described
};

// The replayed session's summary and the one it is compared with (--compare,
// or the source session).
struct Summaries {
    SessionSummary replayed;
    std::optional<SessionSummary> baseline;
};

// --json: the outcome, the calibration or target, and the comparison.
void printJson(QTextStream &out, CommandArgs &args, const ReplayFlags &f, const Driver &d,
               const SimulatedReplay *simulated, const ReplayOutcome &o, const Summaries &s);
// The text: the outcome's lines, then the comparison (or the summary).
void printText(QTextStream &out, CommandArgs &args, const ReplayFlags &f, const ReplayOptions &ro,
               const Driver &d, const SimulatedReplay *simulated, const ReplayOutcome &o, const Summaries &s);

} // namespace bp::app::replay_command
