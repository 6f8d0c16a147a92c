#include "engine/sim/calibration/statistics.h"

#include <algorithm>

namespace bp {

double median(std::vector<double> v)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double relativeSpread(const std::vector<double> &values)
{
    if (values.size() < 2)
        return 0;
    const double m = median(values);
    if (!(m > 0))
        return 0;
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    return (*hi - *lo) / m;
}

} // namespace bp
