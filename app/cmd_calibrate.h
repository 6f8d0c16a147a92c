// batchpilot calibrate: fits a cost model for the model given by the common
// --model/--device/--preset/--threads flags (a profile grid, optionally the
// batch rows of a recorded session) and stores it in the trace database for
// `replay --simulate`; lists, exports and imports calibrations.
// docs/simulation.md describes it.
#pragma once

#include "app_options.h"

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/simulation/simulator.h"

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

} // namespace bp::app
