// renderPdf() in a build without Qt Gui (BATCHPILOT_GUI=OFF): there is no
// PDF writer to link, so every PDF path ends here, with the reason.
#include "report_pdf.h"

namespace bp::report {

bool pdfAvailable()
{
    return false;
}

Result<QByteArray> renderPdf(const ReportData &)
{
    return Status(StatusCode::Unavailable, kPdfUnavailable);
}

} // namespace bp::report
