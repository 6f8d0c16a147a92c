// Time <-> pixel arithmetic of the batch timeline, kept apart from the
// painting code so it can be tested without a view (as hotspot does for its
// time axis). Times are seconds on any monotonic scale (the timeline uses
// seconds relative to "now", so the right edge is 0).
#pragma once

namespace bp::ui {

struct TimelineMapping {
    double startS = -1; // time at the left edge
    double endS = 0;    // time at the right edge (> startS)
    double left = 0;    // pixel x of startS
    double width = 1;   // pixels from startS to endS (> 0)

    // The window of `spanS` seconds ending at `endS`, drawn over [left, left + width).
    static TimelineMapping window(double endS, double spanS, double left, double width);

    double secondsPerPixel() const { return (endS - startS) / width; }
    double toX(double t) const;
    double toTime(double x) const;

    struct Span {
        double x0 = 0, x1 = 0; // pixels, x0 <= x1
        bool visible = false;  // false when [t0, t1] lies wholly outside the window
    };
    // Pixel extent of the interval [t0, t1], clipped to the view and at
    // least `minWidth` wide (a 20 µs batch still gets a visible sliver).
    Span span(double t0, double t1, double minWidth = 1) const;

    // A tick step of 1, 2 or 5 × 10^k seconds that puts ticks at least
    // `minPixels` apart.
    double tickStep(double minPixels) const;
    // The first tick at or after startS for `step`.
    double firstTick(double step) const;

    // Zoomed by `factor` (>1 shows more time) keeping endS fixed, with the
    // span clamped to [minSpanS, maxSpanS].
    TimelineMapping zoomed(double factor, double minSpanS, double maxSpanS) const;
};

} // namespace bp::ui
