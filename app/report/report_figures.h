// The report's figures as labelled, formatted rows, built once from a
// ReportData and shared by the HTML and PDF renderers (the JSON renderer
// writes the raw numbers instead). Also the charts, built from the metric
// samples and the config history.
#pragma once

#include "report_data.h"
#include "svg_chart.h"

#include <QString>

#include <optional>
#include <vector>

namespace bp::report {

struct FigureRow {
    QString label;
    QString value;
    QString note; // how it is defined, or a breakdown ("queue_full 3, out_of_range 1")
};

// p50 / p90 / p99 of one latency component; empty cells print as "–".
struct LatencyRow {
    QString label;
    std::optional<double> p50, p90, p99; // ms
    QString note;
};

struct TimelineRow {
    QString version;
    QString at;     // "12.3 s"
    QString origin; // "rest"
    QString summary;
    QString config; // the config in force from then on, one line
};

// Times: "2024-05-01 12:00:00 UTC" (reports are shared across time zones).
QString displayTime(std::int64_t wallClockUs);
QString isoTime(std::int64_t wallClockUs); // "2024-05-01T12:00:00.123Z"
QString formatMs(double ms);               // "0.412", "12.3", "1520"
QString formatNumber(double v, int decimals);

QString reportTitle(const ReportData &d); // "Session 7 — live, builtin:echo on cpu"
std::vector<FigureRow> sessionFacts(const ReportData &d);
std::vector<FigureRow> headlineFigures(const ReportData &d);
std::vector<LatencyRow> latencyRows(const ReportData &d);
std::vector<TimelineRow> configTimeline(const ReportData &d);

// Latency percentiles, throughput, utilization and batch sizes over time,
// each with the config markers.
std::vector<LineChart> reportCharts(const ReportData &d);

} // namespace bp::report
