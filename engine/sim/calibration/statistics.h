// Small statistics over measured values, one definition for the engine's
// simulator, calibration and the benches (they had four copies of median).
#pragma once

#include <vector>

namespace bp {

// The median (the mean of the two middle values for an even count); 0 when
// there are none.
double median(std::vector<double> values);

// How far repeated measurements of one thing spread: (max − min) / median,
// 0 for fewer than two values or a non-positive median. A quiet machine
// times the same batch within a few percent; other work sharing the cores
// shows up here before it shows up anywhere else.
double relativeSpread(const std::vector<double> &values);

} // namespace bp
