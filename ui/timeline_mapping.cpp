#include "timeline_mapping.h"

#include <algorithm>
#include <cmath>

namespace bp::ui {

TimelineMapping TimelineMapping::window(double endS, double spanS, double left, double width)
{
    return {endS - spanS, endS, left, std::max(width, 1.0)};
}

double TimelineMapping::toX(double t) const
{
    return left + (t - startS) / secondsPerPixel();
}

double TimelineMapping::toTime(double x) const
{
    return startS + (x - left) * secondsPerPixel();
}

TimelineMapping::Span TimelineMapping::span(double t0, double t1, double minWidth) const
{
    Span s;
    if (t1 < t0)
        std::swap(t0, t1);
    if (t1 < startS || t0 > endS)
        return s;
    s.visible = true;
    s.x0 = toX(std::max(t0, startS));
    s.x1 = toX(std::min(t1, endS));
    if (s.x1 - s.x0 < minWidth)
        s.x1 = s.x0 + minWidth;
    return s;
}

double TimelineMapping::tickStep(double minPixels) const
{
    const double minStep = std::max(minPixels, 1.0) * secondsPerPixel();
    double decade = std::pow(10.0, std::floor(std::log10(minStep)));
    for (;;) {
        for (double m : {1.0, 2.0, 5.0})
            if (m * decade >= minStep * (1 - 1e-9))
                return m * decade;
        decade *= 10;
    }
}

double TimelineMapping::firstTick(double step) const
{
    return std::ceil(startS / step - 1e-9) * step;
}

TimelineMapping TimelineMapping::zoomed(double factor, double minSpanS, double maxSpanS) const
{
    const double span = std::clamp((endS - startS) * factor, minSpanS, maxSpanS);
    return window(endS, span, left, width);
}

} // namespace bp::ui
