// The parts of `batchpilot tune` (cmd_tune.cpp) that its printer
// (cmd_tune_print.cpp) shares: the flags as read, what is settled before the
// search, and what the run came to.
#pragma once

#include "app_options.h"
#include "cmd_tune_remote.h"
#include "command_args.h"

#include "engine/sim/calibration/remote_server_model.h"
#include "engine/sim/tune/tune_pipeline.h"
#include "engine/store/trace_store.h"

#include <QString>
#include <QTextStream>

#include <memory>
#include <optional>
#include <string>

namespace bp::app::tune_command {

// The flags, as a pipeline request (the calibration aside).
struct Parsed {
    TuneRequest request;
    QString objectiveName;
};

// What runTune settles before the search: the store, the remote target or
// server model, the request as run and the model to verify on.
struct TuneJob {
    std::shared_ptr<TraceStore> store;
    // --target: the server's remote calibration, its current settings the
    // base; it is verified on the server itself, after --apply (not by the
    // pipeline).
    std::optional<RemoteTune> remoteTarget;
    // A remote calibration of a vLLM, TGI, SGLang or Triton server without
    // --target: that server's scheduler model, its settings from
    // --server-config, the calibration's reading and the probe's caps.
    std::optional<RemoteServerModel> serverModel;
    TuneRequest request; // as asked, or on the server's settings (verify off)
    Calibration calibration;
    std::shared_ptr<Backend> backend; // verifies the pick (request.verify)
};

// What the run came to beside the search: the server's current settings
// judged against the pick, and the verification on a remote target.
struct TuneOutcome {
    std::optional<BatchingConfig> current;
    std::optional<TuneFigures> currentFigures, measured;
    // A server's current settings against the pick: a change only when it is
    // better by more than the fit can tell (judgeAgainstCurrent, tuner.h).
    std::optional<CurrentVerdict> verdict;
    std::optional<ReplayOutcome> verified;
    bool keep = false;
    BatchingConfig pick;
    std::string pickLabel;
    bool cancelled = false;
    bool tokenLevel = false;
};

// --json: the stored document with every candidate, the front and the
// server's current settings judged.
void printJson(QTextStream &out, const TuneJob &job, const TuneRun &run, const TuneOutcome &o);
// The text: the search, the recommendation, the remote pick, the verification.
void printText(QTextStream &out, const AppOptions &options, CommandArgs &args, const Parsed &parsed,
               const TuneJob &job, const TuneRun &run, const TuneOutcome &o);

} // namespace bp::app::tune_command
