#include "axis_scale.h"

#include <algorithm>
#include <cmath>

namespace bp::report {

AxisScale AxisScale::nice(double min, double max, int targetTicks)
{
    if (!std::isfinite(min) || !std::isfinite(max))
        return {0, 1, 0.2};
    if (min > max)
        std::swap(min, max);
    if (max - min < 1e-12) {
        // A flat line: centre it in a range of its own size ([0, 1] for
        // zero), keeping a zero baseline under a non-negative value.
        const double v = min;
        const double pad = std::fabs(v) > 1e-12 ? std::fabs(v) * 0.5 : 1.0;
        min = v - pad;
        max = v + pad;
        if (v >= 0 && min < 0)
            min = 0;
    }
    const double raw = (max - min) / double(std::max(1, targetTicks));
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    double step = magnitude * 10;
    for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
        if (magnitude * m >= raw * (1 - 1e-9)) {
            step = magnitude * m;
            break;
        }
    }
    AxisScale s;
    s.step = step;
    s.lo = std::floor(min / step + 1e-9) * step;
    s.hi = std::ceil(max / step - 1e-9) * step;
    if (s.hi <= s.lo)
        s.hi = s.lo + step;
    return s;
}

std::vector<double> AxisScale::ticks() const
{
    std::vector<double> out;
    const int n = int(std::lround((hi - lo) / step));
    const double scale = std::pow(10.0, decimals() + 3);
    for (int i = 0; i <= n; ++i)
        out.push_back(std::round((lo + step * i) * scale) / scale);
    return out;
}

double AxisScale::map(double v, double p0, double p1) const
{
    if (hi == lo)
        return p0;
    return p0 + (v - lo) / (hi - lo) * (p1 - p0);
}

int AxisScale::decimals() const
{
    if (step >= 1)
        return std::fmod(step, 1.0) == 0 ? 0 : 1;
    // 0.25 needs two decimals, 0.2 one, 0.05 two.
    int d = 0;
    double s = step;
    while (d < 9 && std::fabs(s - std::round(s)) > 1e-9 * std::max(1.0, std::fabs(s))) {
        s *= 10;
        ++d;
    }
    return d;
}

} // namespace bp::report
