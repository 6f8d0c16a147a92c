// batchpilot calibrate: fits a cost model for the model given by the common
// --model/--device/--preset/--threads flags (a profile grid, optionally the
// batch rows of a recorded session) and stores it in the trace database for
// `replay --simulate`; lists, exports and imports calibrations.
// docs/simulation.md describes it.
#pragma once

#include "app_options.h"

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/calibration/remote_server_model.h"
#include "engine/sim/simulation/simulator.h"

#include <functional>
#include <string>

namespace bp::app {

int runCalibrate(const AppOptions &options);

class CommandArgs;
// The calibration a simulation uses (replay --simulate, tune): --calibration
// ID|FILE, or the newest calibration of --model (and --preset for built-ins,
// --device unless auto, --threads unless 0). NotFound says which
// `batchpilot calibrate` to run.
Result<Calibration> calibrationFor(const TraceStore &store, const AppOptions &options,
                                   const CommandArgs &args);
// How a simulation charges each unit: --noise none|mean|drawn (default
// drawn); InvalidArgument naming the bad value.
Result<CostNoise> costNoiseFor(const CommandArgs &args);
// The server model a simulation of `calibration` runs: for a remote
// calibration of a server BatchPilot models (vLLM, TGI, SGLang, Triton,
// llama.cpp), that server's scheduler and its settings (those in
// `serverConfig`, a --server-config FILE read only then, first; then the
// calibration's reading and the probe's caps). nullopt for a local
// calibration, a server without a model, or when --config gives the config.
// The one place replay --simulate, tune, plan and autoscale --trace make
// this choice.
Result<std::optional<RemoteServerModel>> serverModelFor(const AppOptions &options,
                                                        const Calibration &calibration,
                                                        const std::optional<QString> &serverConfig = {});
// The batching config each simulated replica runs (plan, autoscale
// --trace): `config` (--config, or what the source recorded); without
// --config, a remote calibration of a server BatchPilot models (vLLM, TGI,
// SGLang) runs that server's scheduler, said on `note`. InvalidArgument
// when the config is invalid or needs a generative model the calibration
// is not of.
Result<BatchingConfig> simulatedReplicaConfig(const AppOptions &options, const Calibration &calibration,
                                              BatchingConfig config,
                                              const std::function<void(std::string)> &note);

} // namespace bp::app
