// The PDF form of a session report, written by Qt's PDF writer: the HTML
// report's content laid out by QTextDocument on A4 pages, with the charts
// drawn as vectors from the same SVG (svg_text_object.h).
//
// Needs a QGuiApplication (fonts); without a display, run it with the
// `offscreen` platform (`batchpilot report` does that itself). Safe on a
// worker thread; renders nothing shared.
//
// Two implementations, one per build: report_pdf.cpp (BATCHPILOT_GUI=ON)
// and report_pdf_unavailable.cpp (OFF: no Qt Gui, so no PDF; every PDF
// path, the CLI's, the REST route's and ReportBuilder's, says so with
// kPdfUnavailable).
#pragma once

#include "report_data.h"

#include <QByteArray>

namespace bp::report {

// Why a build without Qt Gui refuses PDF reports (the CLI prints it, REST
// answers it with 501).
inline constexpr char kPdfUnavailable[] =
    "this build has no Qt Gui (BATCHPILOT_GUI=OFF): PDF reports need it; HTML and JSON work";

// False in a build without Qt Gui: renderPdf() then always fails.
bool pdfAvailable();

// Unavailable when no QGuiApplication exists, and (kPdfUnavailable) always
// in a build without Qt Gui.
Result<QByteArray> renderPdf(const ReportData &data);

} // namespace bp::report
