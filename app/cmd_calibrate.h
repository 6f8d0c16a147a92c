// batchpilot calibrate: fits a cost model for the model given by the common
// --model/--device/--preset/--threads flags (a profile grid, optionally the
// batch rows of a recorded session) and stores it in the trace database for
// `replay --simulate`; lists, exports and imports calibrations.
// docs/simulation.md describes it.
#pragma once

#include "app_options.h"

namespace bp::app {

int runCalibrate(const AppOptions &options);

} // namespace bp::app
