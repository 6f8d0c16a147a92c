#include "cmd_report.h"
#include "app/cli_text.h"

#include "report_builder.h"
#include "report_pdf.h"

#include "app/command_args.h"
#include "app/commands.h"
#include "engine/store/trace_store.h"

#include <QFileInfo>
#include <QTextStream>

namespace bp::app {

namespace {

const QString kUsage =
    QStringLiteral("usage: batchpilot report SESSION -o FILE.html|FILE.pdf|FILE.json [--db PATH]");

int fail(const QString &message, int code = 1)
{
    return failCommand(QStringLiteral("report"), message, code);
}

// "-o FILE" is the conventional spelling; CommandArgs knows only "--" flags.
QStringList normalized(const QStringList &args)
{
    QStringList out;
    for (const QString &a : args)
        out << (a == QLatin1String("-o") ? QStringLiteral("--output") : a);
    return out;
}

} // namespace

int runReport(const AppOptions &options)
{
    CommandArgs args(normalized(options.commandArgs), commandOptions("report"));
    if (!args.error().isEmpty())
        return fail(args.error() + "\n" + kUsage, 2);
    if (args.positional().size() != 1 || !args.has("output"))
        return fail(kUsage, 2);
    const QString path = args.value("output");
    const auto format = report::formatFromPath(path);
    if (!format)
        return fail(
            QStringLiteral("cannot tell the format from '%1': the file name must end in .html, .pdf or .json")
                .arg(path),
            2);
    if (*format == report::ReportFormat::Pdf && !report::pdfAvailable())
        return fail(QString::fromLatin1(report::kPdfUnavailable)); // before the store is even opened

    auto store = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!store)
        return fail(QString::fromStdString(store.status().message()));

    const QString which = args.positional().front();
    std::int64_t sessionId = 0;
    if (which == QLatin1String("last")) {
        auto list = (*store)->sessions();
        if (!list)
            return fail(QString::fromStdString(list.status().message()));
        if (list->empty())
            return fail(QStringLiteral("no sessions in %1").arg(options.db));
        sessionId = list->front().id;
    } else {
        bool ok = false;
        sessionId = which.toLongLong(&ok);
        if (!ok || sessionId <= 0)
            return fail(
                QStringLiteral("SESSION must be a session id or 'last', got '%1'\n%2").arg(which, kUsage), 2);
    }

    const report::ReportBuilder builder(*store);
    if (Status s = builder.write(sessionId, *format, path); !s.isOk())
        return fail(QString::fromStdString(s.message()));
    QTextStream(stdout) << QStringLiteral("wrote the %1 report of session %2 to %3 (%4 bytes)\n")
                               .arg(report::formatName(*format).toUpper())
                               .arg(sessionId)
                               .arg(path)
                               .arg(QFileInfo(path).size());
    return 0;
}

} // namespace bp::app
