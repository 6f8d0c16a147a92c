// batchpilot autoscale: autoscaler policies (engine/sim/fleet/autoscaler.h)
// on a fleet. `--watch URL[,URL...]` is the advisory mode:
// every period it scrapes each server's /metrics, folds them into what the
// policy observes (engine/sim/fleet/fleet_watch.h) and prints what the
// policy would do and why. It changes nothing. `--export keda|hpa` prints
// the policy as a KEDA ScaledObject or an autoscaling/v2 HPA instead
// (engine/sim/fleet/autoscale_export.h, docs/export.md "Autoscaler
// manifests"). `--trace ID --slo SPEC` replays the policy over a trace on a
// simulated fleet (cmd_autoscale_trace.cpp); `--decide` reads observations
// on stdin and prints the policy's decisions, for a controller of one's own.
// docs/capacity.md "Autoscaling" describes the policies and their knobs.
#pragma once

#include "app_options.h"

#include "engine/core/result.h"
#include "engine/sim/fleet/autoscale_export.h"
#include "engine/sim/fleet/autoscaler.h"

#include <QString>

#include <memory>
#include <optional>

namespace bp::app {

class CommandArgs;

// A length flag in seconds: "0" or a span ("300s", "5m") up to `maxS`;
// `fallback` when absent, nullopt when malformed.
std::optional<double> optionSeconds(CommandArgs &args, const QString &flag, double fallback, double maxS);
// The policy's knobs the flags describe (--policy and its knobs), validated.
Result<AutoscaleKnobs> autoscaleKnobsFromArgs(CommandArgs &args);
// The policy they describe.
Result<std::unique_ptr<AutoscalePolicy>> autoscalePolicyFromArgs(CommandArgs &args);

int runAutoscale(const AppOptions &options);
// --decide (cmd_autoscale_decide.cpp): observations on stdin, the policy's
// decisions on stdout, one per line; 1 when a line was refused.
int runAutoscaleDecide(AutoscalePolicy &policy);
// --trace (cmd_autoscale_trace.cpp): the policy replayed over a trace in simulation.
int runAutoscaleTrace(const AppOptions &options, CommandArgs &args);

} // namespace bp::app
