// batchpilot plan (--trace ID | --session ID) --slo SPEC: the fewest
// replicas (and which router) that meet the SLO in each window of the
// trace, by simulating a fleet of the calibrated model (engine/sim/fleet/fleet_plan.h);
// a schedule by hour of day, the cost with --replica-cost, stored in the
// trace database (capacity_plans) and shown in reports; --export FORMAT
// prints it for Ray Serve, vLLM or a Kubernetes HPA. docs/capacity.md
// describes the workflow.
#pragma once

#include "app_options.h"

namespace bp::app {

int runPlan(const AppOptions &options);

} // namespace bp::app
