// The pure arithmetic of a chart axis: a "nice" range and tick step around
// the data (1, 2, 2.5 or 5 times a power of ten), and the value -> pixel
// mapping. Kept apart from the SVG writing so it is tested data-driven.
#pragma once

#include <vector>

namespace bp::report {

struct AxisScale {
    double lo = 0;
    double hi = 1;
    double step = 0.2;

    // A range that contains [min, max], starts at a multiple of the step and
    // has about `targetTicks` intervals. An empty or degenerate range
    // (min == max, NaN) becomes a small range around the value (or [0, 1]).
    static AxisScale nice(double min, double max, int targetTicks = 5);

    // lo, lo + step, ..., hi (rounded so that 0.1 + 0.2 prints as 0.3).
    std::vector<double> ticks() const;

    // Maps v in [lo, hi] linearly onto [p0, p1] (p1 < p0 for a y axis).
    double map(double v, double p0, double p1) const;

    // Decimals that show every tick distinctly (0 for steps >= 1).
    int decimals() const;
};

} // namespace bp::report
