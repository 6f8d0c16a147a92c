// The PDF form of a session report, written by Qt's PDF writer: the HTML
// report's content laid out by QTextDocument on A4 pages, with the charts
// drawn as vectors from the same SVG (svg_text_object.h).
//
// Needs a QGuiApplication (fonts); without a display, run it with the
// `offscreen` platform (`batchpilot report` does that itself). Safe on a
// worker thread; renders nothing shared.
#pragma once

#include "report_data.h"

#include <QByteArray>

namespace bp::report {

// FailedPrecondition when no QGuiApplication exists.
Result<QByteArray> renderPdf(const ReportData &data);

} // namespace bp::report
