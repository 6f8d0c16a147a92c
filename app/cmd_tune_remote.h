// batchpilot tune --target URL (docs/remote.md "Tuning the server"): the
// search runs on the target's remote calibration (calibrate --target),
// starting from the server's current settings; the pick is printed in the
// server's own syntax beside the current settings, both predicted;
// --apply sends it (PUT /v1/config, a BatchPilot target), and the
// verification is then a replay of the same arrivals into that server,
// predicted against measured.
//
// Only a BatchPilot target is tuned today: its knobs are BatchPilot's own,
// read from GET /v1/config and set by PUT /v1/config. Another kind is
// refused with what is missing (a scheduler model of that server).
#pragma once

#include "app_options.h"
#include "command_args.h"

#include "remote/remote_options.h"

#include "engine/replay/replayer.h"
#include "engine/sim/calibration/calibration.h"
#include "engine/sim/calibration/remote_server_model.h"
#include "engine/sim/tune/tuner.h"
#include "engine/store/trace_store.h"

#include <QTextStream>

#include <atomic>
#include <functional>

namespace bp::app {

struct RemoteTune {
    remote::RemoteOptions options; // the target, the model there, its protocol and token
    Calibration calibration;       // its remote calibration
    BatchingConfig current;        // the server's settings now (read from it, or --server-config)
    std::string settingsSource;    // where they were read
    RemoteServerModel model;       // current, and where each of its settings came from
    bool applied = false;
};

// The pick in the server's own syntax: the launch command (vLLM, TGI,
// SGLang) or config.pbtxt fields (Triton); empty for BatchPilot.
std::string launchText(const BatchingConfig &config, const std::string &model);

// --target URL with --model NAME: the newest calibration of that target
// (or --calibration ID|FILE, which must be a remote one) and the server's
// current config. InvalidArgument for a server that is not BatchPilot.
Result<RemoteTune> remoteTune(const TraceStore &store, const AppOptions &options, const CommandArgs &args);

// The pick in the server's syntax (the PUT /v1/config body and the command
// that sends it), beside the server's current settings, both predicted.
void printRemotePick(QTextStream &out, const RemoteTune &target, const BatchingConfig &pick,
                     const TuneFigures &pickFigures, const TuneFigures &currentFigures, bool tokenLevel);

// PUT /v1/config with the pick; the server's answer is the error.
Status applyPick(const RemoteTune &target, const BatchingConfig &pick);

// The same arrivals replayed into the target (now under the pick).
Result<ReplayOutcome> replayOnTarget(std::shared_ptr<TraceStore> store, const RemoteTune &target,
                                     ReplayOptions options,
                                     const std::function<void(const ReplayProgress &)> &progress,
                                     const std::atomic<bool> *cancel);

} // namespace bp::app
