#include "report_pdf.h"

#include "report_figures.h"
#include "report_html.h"
#include "svg_text_object.h"

#include <QBuffer>
#include <QGuiApplication>
#include <QPageLayout>
#include <QPdfWriter>
#include <QTextDocument>

namespace bp::report {

namespace {

// The document is laid out on pages this wide (in CSS pixels at 96 dpi)
// and scaled onto the A4 page inside its margins: wide enough for the
// 720-pixel charts plus the document margin.
constexpr double kPageWidth = 760;
constexpr double kMarginMm = 14;

} // namespace

bool pdfAvailable()
{
    return true;
}

Result<QByteArray> renderPdf(const ReportData &data)
{
    if (!qobject_cast<QGuiApplication *>(QCoreApplication::instance()))
        return Status(StatusCode::Unavailable,
                      "PDF rendering needs a QGuiApplication (use the offscreen platform when there is no display)");

    std::vector<QByteArray> svgs;
    SvgOptions svgOptions;
    svgOptions.xmlNamespace = true; // QSvgRenderer reads a standalone SVG document
    for (const LineChart &chart : reportCharts(data))
        svgs.push_back(renderSvgChart(chart, svgOptions).toUtf8());

    QByteArray pdf;
    QBuffer buffer(&pdf);
    buffer.open(QIODevice::WriteOnly);
    {
        QPdfWriter writer(&buffer);
        writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait,
                                         QMarginsF(kMarginMm, kMarginMm, kMarginMm, kMarginMm), QPageLayout::Millimeter));
        writer.setResolution(300);
        writer.setTitle(QStringLiteral("BatchPilot report: session %1").arg(data.session.id));
        writer.setCreator(QStringLiteral("BatchPilot"));

        QTextDocument document;
        document.setDocumentMargin(4);
        document.setHtml(QString::fromUtf8(renderHtml(data, HtmlFlavor::QtTextDocument)));
        SvgTextObject charts(std::move(svgs));
        charts.install(document, chartImageName);
        // A page size makes the document paginate itself (tables and charts
        // are not cut between pages) and print() scale it onto the paper.
        const QRectF paper = writer.pageLayout().paintRect(QPageLayout::Millimeter);
        document.setPageSize(QSizeF(kPageWidth, kPageWidth * paper.height() / paper.width()));
        document.print(&writer);
    }
    if (pdf.isEmpty())
        return Status(StatusCode::Internal, "the PDF writer produced no output");
    return pdf;
}

} // namespace bp::report
