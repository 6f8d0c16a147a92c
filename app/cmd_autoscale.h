// batchpilot autoscale: autoscaler policies (engine/sim/fleet/autoscaler.h)
// on a fleet. `--watch URL[,URL...]` is the advisory mode (issue 37 item 3):
// every period it scrapes each server's /metrics, folds them into what the
// policy observes (engine/sim/fleet/fleet_watch.h) and prints what the
// policy would do and why. It changes nothing. docs/capacity.md
// "Autoscaling" describes the policies and their knobs.
#pragma once

#include "app_options.h"

#include "engine/core/result.h"
#include "engine/sim/fleet/autoscaler.h"

#include <memory>

namespace bp::app {

class CommandArgs;

// The policy the flags describe (--policy and its knobs), validated.
Result<std::unique_ptr<AutoscalePolicy>> autoscalePolicyFromArgs(CommandArgs &args);

int runAutoscale(const AppOptions &options);

} // namespace bp::app
