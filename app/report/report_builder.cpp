#include "report_builder.h"

#include "report_html.h"
#include "report_json.h"
#include "report_pdf.h"

#include "engine/store/trace_store.h"

#include <QFileInfo>
#include <QSaveFile>

namespace bp::report {

std::optional<ReportFormat> formatFromName(const QString &name)
{
    const QString n = name.toLower();
    if (n == QLatin1String("json"))
        return ReportFormat::Json;
    if (n == QLatin1String("html") || n == QLatin1String("htm"))
        return ReportFormat::Html;
    if (n == QLatin1String("pdf"))
        return ReportFormat::Pdf;
    return std::nullopt;
}

std::optional<ReportFormat> formatFromPath(const QString &path)
{
    const QString suffix = QFileInfo(path).suffix();
    return suffix.isEmpty() ? std::nullopt : formatFromName(suffix);
}

QString formatName(ReportFormat format)
{
    switch (format) {
    case ReportFormat::Json:
        return QStringLiteral("json");
    case ReportFormat::Html:
        return QStringLiteral("html");
    case ReportFormat::Pdf:
        return QStringLiteral("pdf");
    }
    return {};
}

QByteArray contentType(ReportFormat format)
{
    switch (format) {
    case ReportFormat::Json:
        return "application/json";
    case ReportFormat::Html:
        return "text/html; charset=utf-8";
    case ReportFormat::Pdf:
        return "application/pdf";
    }
    return "application/octet-stream";
}

ReportBuilder::ReportBuilder(std::shared_ptr<const TraceStore> store) : m_store(std::move(store)) {}

Result<ReportData> ReportBuilder::load(std::int64_t sessionId) const { return loadReportData(*m_store, sessionId); }

Result<QByteArray> ReportBuilder::render(const ReportData &data, ReportFormat format)
{
    switch (format) {
    case ReportFormat::Json:
        return QByteArray::fromStdString(reportToJson(data).dump(2) + "\n");
    case ReportFormat::Html:
        return renderHtml(data);
    case ReportFormat::Pdf:
        return renderPdf(data);
    }
    return Status(StatusCode::InvalidArgument, "unknown report format");
}

Result<QByteArray> ReportBuilder::build(std::int64_t sessionId, ReportFormat format) const
{
    auto data = load(sessionId);
    if (!data)
        return data.status();
    return render(*data, format);
}

Status ReportBuilder::write(std::int64_t sessionId, ReportFormat format, const QString &path) const
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return Status(StatusCode::Unavailable, "cannot write " + path.toStdString() + ": " + file.errorString().toStdString());
    auto bytes = build(sessionId, format);
    if (!bytes) {
        file.cancelWriting();
        return bytes.status();
    }
    if (file.write(*bytes) != bytes->size() || !file.commit())
        return Status(StatusCode::Unavailable, "cannot write " + path.toStdString() + ": " + file.errorString().toStdString());
    return {};
}

Result<QByteArray> renderReport(const TraceStore &store, std::int64_t sessionId, const QString &format)
{
    const auto f = formatFromName(format);
    if (!f)
        return Status(StatusCode::InvalidArgument,
                      "unknown report format '" + format.toStdString() + "' (use html, pdf or json)");
    auto data = loadReportData(store, sessionId);
    if (!data)
        return data.status();
    return ReportBuilder::render(*data, *f);
}

QByteArray renderReport(const TraceStore &store, std::int64_t sessionId, const QString &format, QString *error)
{
    auto r = renderReport(store, sessionId, format);
    if (error)
        *error = r ? QString() : QString::fromStdString(r.status().message());
    return r ? *r : QByteArray();
}

} // namespace bp::report
