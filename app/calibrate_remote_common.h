// What `calibrate --target`'s probe and its re-pricings of a stored
// calibration (--session, --refresh: cmd_calibrate_refit.cpp) share: the
// flags, running a bounded probe plan, and storing and printing a fit.
#pragma once

#include "remote/probe_runner.h"

#include "engine/core/batching_config.h"
#include "engine/core/result.h"
#include "engine/sim/calibration/calibration.h"
#include "engine/sim/calibration/remote_settings.h"

#include <QString>
#include <QTextStream>

#include <cstdint>
#include <optional>
#include <string>

namespace bp {
class TraceStore;
}

namespace bp::app::calibrate_target {

int fail(const QString &message, int code = 1);

// A pace move past this is warned of (the prediction's target is 15 %).
constexpr double kPaceWarning = 0.15;

// The flags of a remote calibration.
struct RemoteFlags {
    remote::RemoteOptions ro;
    QString protocol;
    std::string server; // --server: "auto" until detected
    double maxDuration = 600, scrape = 250, session = 0, refresh = 0;
};

// Stores `fitted` and prints it (or its JSON); the exit code.
int store(TraceStore &db, Result<Calibration> fitted, bool json);

// The model of a llama-server as its settings were read; nullopt for
// another kind, or settings not read.
std::optional<BatchingConfig> llamaCppModel(const std::string &server, const ServerSettings &settings);

// The bounded probe `plan` of a server of kind `server` (its settings
// `settings`), said before it runs; Ctrl+C stops it and what was measured
// is fitted.
remote::ProbeRun runPlan(const RemoteFlags &f, const std::string &server, const ServerSettings &settings,
                         const ProbePlan &plan, QTextStream &err);
// `plan` within --timeout per request and --max-duration in all.
ProbePlan bounded(ProbePlan plan, const RemoteFlags &f);
// Requests not sent, and the first that failed.
void reportShortfall(const remote::ProbeRun &run, QTextStream &err);

// --session ID: the newest calibration of the target, refitted with the
// session's rows beside its own.
int refine(TraceStore &db, const remote::RemoteOptions &ro, const std::string &server, std::int64_t session,
           bool json);
// --refresh ID: the server's single-stream pace measured again (a few
// seconds) and calibration ID stored anew with every cost scaled to it.
int refresh(TraceStore &db, const RemoteFlags &f, std::int64_t id, bool json, QTextStream &err);

} // namespace bp::app::calibrate_target
