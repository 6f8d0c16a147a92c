// Session reports: load a session from the trace store and render it as
// JSON, self-contained HTML or PDF. The one entry point the CLI
// (`batchpilot report`), the REST endpoint (GET /v1/sessions/{id}/report)
// and the console's File > Export report… share. docs/reports.md describes
// the contents.
//
// Threading: ReportBuilder is a value holding a shared store (thread-safe);
// build() and write() may run on any thread, several at once. PDF needs a
// QGuiApplication to exist (fonts), and a build with Qt Gui
// (report_pdf.h: pdfAvailable()); HTML and JSON need only Qt Core.
#pragma once

#include "report_data.h"

#include "engine/core/result.h"

#include <QByteArray>
#include <QString>

#include <memory>
#include <optional>

namespace bp {
class TraceStore;
}

namespace bp::report {

enum class ReportFormat { Json, Html, Pdf };

// "json", "html", "pdf" (case-insensitive); nullopt otherwise.
std::optional<ReportFormat> formatFromName(const QString &name);
// By the file's extension: .json, .html / .htm, .pdf.
std::optional<ReportFormat> formatFromPath(const QString &path);
QString formatName(ReportFormat format);     // "json"
QByteArray contentType(ReportFormat format); // "text/html; charset=utf-8"

class ReportBuilder {
public:
    explicit ReportBuilder(std::shared_ptr<const TraceStore> store);

    // NotFound for an unknown session.
    Result<ReportData> load(std::int64_t sessionId) const;
    // Unavailable: PDF without a QGuiApplication, or in a build without Qt
    // Gui (report_pdf.h: kPdfUnavailable).
    static Result<QByteArray> render(const ReportData &data, ReportFormat format);
    Result<QByteArray> build(std::int64_t sessionId, ReportFormat format) const;
    // Renders and writes `path` atomically (a partial file never replaces
    // an existing one). The file is opened before rendering, so an
    // unwritable path fails at once. Unavailable: cannot write the path.
    Status write(std::int64_t sessionId, ReportFormat format, const QString &path) const;

private:
    std::shared_ptr<const TraceStore> m_store;
};

// For the REST endpoint: the report of `sessionId` in the format named by
// `format` ("json", "html", "pdf"). Errors: InvalidArgument (unknown format:
// 400), NotFound (unknown session: 404), anything else (500).
Result<QByteArray> renderReport(const TraceStore &store, std::int64_t sessionId, const QString &format);
// The same with the error as text, empty on success.
QByteArray renderReport(const TraceStore &store, std::int64_t sessionId, const QString &format,
                        QString *error);

} // namespace bp::report
