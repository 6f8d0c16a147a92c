// The spread of a calibration's fit carried through a simulation.
// A simulated latency is as good as the cost model
// behind it, and near saturation a few percent of cost become tens of
// percent of latency. So `replay --simulate` runs the same arrivals twice
// more, with every unit's predicted cost scaled down and up by the fit's
// spread, and shows each latency figure with the range they give
// ("p50 1.4 s [1.1-2.2]"), and how to narrow it.
//
// The spread is the fit's rms relative error (over whole batches for the
// request-level policies, over iterations for `continuous`), at most 90%.
// The draws (CostNoise) are kept; the scheduler lateness is not scaled.
#pragma once

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/simulation/simulator.h"
#include "engine/sim/tune/tuner.h"

#include <optional>
#include <span>
#include <string>

namespace bp {

// End-to-end latency of the samples completed OK, seconds: nearest-rank
// percentiles (as a session summary) and the mean; zeros when none.
struct LatencyFigures {
    std::size_t completed = 0;
    double p50S = 0, p90S = 0, p99S = 0, meanS = 0;
};
LatencyFigures latencyFigures(const std::vector<TuneSample> &samples);

struct SimulatedInterval {
    double spread = 0;             // costs scaled by (1 - spread) and (1 + spread)
    LatencyFigures low, mid, high; // per figure: low <= mid <= high
};

// The fit's spread for units of `policy`; nullopt when the calibration
// has no error for them (nothing measured).
std::optional<double> fitSpread(const Calibration &calibration, PolicyKind policy);

// `options` as the simulation ran (its observer, samples and progress are
// not used) over `arrivals`, again with the costs scaled by 1 ± spread.
SimulatedInterval simulatedInterval(const SimulatorOptions &options, std::span<const PlannedArrival> arrivals,
                                    double spread);

// "p50 1.4 s [1.1-2.2], p90 ..., p99 ..., mean ..." of the interval.
std::string describeInterval(const SimulatedInterval &interval);

// "with the fit's spread (every cost x0.81 to x1.19: its rms error): p50 ..."
std::string describeSpread(const SimulatedInterval &interval);
// {cost_spread, low, simulated, high (p50_s, p90_s, p99_s, mean_s), narrow}
nlohmann::json simulatedIntervalJson(const SimulatedInterval &interval, const Calibration &calibration);

// How to narrow it: a calibration from a recorded session of this machine.
std::string narrowIntervalHint(const Calibration &calibration);

} // namespace bp
