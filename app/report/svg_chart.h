// A simple line chart written as SVG text: axes with nice ticks, labels, a
// legend, and vertical config-change markers with their summary. The same
// SVG goes inline into the HTML report and, through QSvgRenderer, into the
// PDF. Pure string building (Qt Core only): no fonts are measured, text
// widths are estimated, so it runs on any thread and without a display.
//
// The SVG uses presentation attributes only (no CSS, no scripts, no
// external references) so that browsers and QtSvg (SVG Tiny 1.2) draw it
// alike.
#pragma once

#include <QString>

#include <optional>
#include <vector>

namespace bp::report {

struct ChartSeries {
    ChartSeries() = default;
    ChartSeries(QString name_, QString color_, std::vector<double> y_, bool dashed_ = false)
        : name(std::move(name_)), color(std::move(color_)), y(std::move(y_)), dashed(dashed_)
    {
    }
    QString name;
    QString color;         // "#1f77b4"
    std::vector<double> y; // index-aligned with LineChart::x; NaN leaves a gap
    bool dashed = false;
};

struct ChartMarker {
    double x = 0;    // in x units (seconds)
    QString label;   // short, drawn at the top of the line: "v2"
    QString summary; // the legend line under the chart: "12.0 s (rest): max_batch_size 8→32"
};

struct LineChart {
    LineChart() = default;
    LineChart(QString title_, QString yLabel_) : title(std::move(title_)), yLabel(std::move(yLabel_)) {}
    QString title;
    QString yLabel;
    QString xLabel = QStringLiteral("time since session start (s)");
    std::vector<double> x;
    std::vector<ChartSeries> series;
    std::vector<ChartMarker> markers;
    std::optional<double> yMax;       // fixed top (100 for percentages); else from the data
    QString emptyText = QStringLiteral("no metric samples were recorded in this session");
    int width = 720;
    int plotHeight = 190;
    // Marker summaries listed under the chart; the rest are counted.
    int maxMarkerLines = 6;
};

struct SvgOptions {
    // The xmlns attribute: required by standalone SVG readers (QtSvg),
    // unnecessary inside HTML5 (where the report keeps every URL out).
    bool xmlNamespace = false;
};

// The chart's total height in pixels (plot, axes, legend and marker lines).
int chartHeight(const LineChart &chart);

QString renderSvgChart(const LineChart &chart, const SvgOptions &options = {});

} // namespace bp::report
