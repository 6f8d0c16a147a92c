// The parts of `batchpilot autoscale --trace` (cmd_autoscale_trace.cpp)
// that its printer (autoscale_trace_print.cpp) shares.
#pragma once

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/fleet/autoscale_sim.h"
#include "engine/sim/tune/tuner.h"
#include "engine/store/trace_store.h"

#include "command_args.h"

#include <QString>
#include <QTextStream>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bp::app::autoscale_trace {

// The cold start and where it came from (said in the output and the document).
struct ColdStart {
    double seconds = 0;
    std::string from;
};

// The static plan the run is compared with: its replicas per window in
// serving time, read from a plan document (stored, or made here).
struct PlanLine {
    std::optional<std::int64_t> id;
    double windowS = 0; // serving time
    std::vector<int> replicas;
    double replicaHours = 0, cost = 0;
    int peak = 0;
};

struct Setup {
    std::int64_t traceId = 0;
    double rateScale = 1;
    TuneSlo slo;
    Calibration calibration;
    SimulatorOptions model;
    CostNoise noise = CostNoise::Drawn;
    AutoscaleSimRequest request;
    ColdStart cold;
    int jobs = 1;
};

// The plan to compare with: --plan ID, or plan the trace here (hourly, as
// `plan` does by default). nullopt with --no-compare.
Result<std::optional<PlanLine>> comparePlan(CommandArgs &args, const TraceStore &store, const Setup &s,
                                            const std::atomic<bool> *cancel, QTextStream &err);
// --policy scheduled without --schedule: the plan's replicas per window,
// asked for a cold start ahead (--lead).
Result<AutoscaleKnobs> scheduleFromPlan(CommandArgs &args, const PlanLine &plan, double coldStartS);

QString megabytes(double bytes);
// "97.5%"; two decimals just under 100%.
QString percent(double share);
// "hh:mm:ss" of serving time.
QString clock(double seconds);
nlohmann::json planJson(const PlanLine &p);
// The run as text: its windows, cost, and the plan and fixed fleet beside it.
void printRun(QTextStream &out, const AutoscaleRun &run, const Setup &s, const std::optional<PlanLine> &plan);

} // namespace bp::app::autoscale_trace
