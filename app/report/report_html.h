// The HTML form of a session report: ONE self-contained file. Charts are
// inline SVG (svg_chart.h), the stylesheet is inline, there is no script,
// no font or image fetched from anywhere, and no URL at all in the markup
// (free text the user typed, such as session notes, is shown escaped as
// text). It opens the same offline as online.
//
// The same markup, in a flavour Qt's rich-text engine understands, is what
// the PDF renderer lays out (report_pdf.h).
#pragma once

#include "report_data.h"

#include <QByteArray>

namespace bp::report {

enum class HtmlFlavor {
    Browser,        // inline <svg> charts, full CSS
    QtTextDocument, // <img src="bpchart:N"> placeholders for the PDF renderer's vector charts
};

// The image name of chart `index` in the QtTextDocument flavour.
QString chartImageName(int index);

// UTF-8 HTML.
QByteArray renderHtml(const ReportData &data, HtmlFlavor flavor = HtmlFlavor::Browser);

} // namespace bp::report
