#include "cmd_store.h"
#include "cli_text.h"

#include "command_args.h"
#include "commands.h"
#include "data_paths.h"

#include "engine/core/span_text.h"
#include "engine/store/trace_store.h"

#include <QDateTime>
#include <QTextStream>

namespace bp::app {

namespace {

QString wallTime(std::int64_t us)
{
    return QDateTime::fromMSecsSinceEpoch(us / 1000).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
}

// Left-aligned columns, two spaces apart.
QString table(const QStringList &head, const QList<QStringList> &rows)
{
    QList<int> width;
    for (const QString &h : head)
        width << int(h.size());
    for (const QStringList &r : rows)
        for (int c = 0; c < r.size(); ++c)
            width[c] = std::max(width[c], int(r[c].size()));
    QString out;
    auto line = [&](const QStringList &cells) {
        QString l;
        for (int c = 0; c < cells.size(); ++c)
            l += c + 1 < cells.size() ? cells[c].leftJustified(width[c] + 2) : cells[c];
        out += l.trimmed() + "\n";
    };
    line(head);
    for (const QStringList &r : rows)
        line(r);
    return out;
}

} // namespace

namespace {

constexpr int kGoOn = -1;

int failImport(const QString &message, int code = 1)
{
    return failCommand("import-trace", message, code);
}

// --format, --skip-failed, --block-tokens.
int readImportOptions(CommandArgs &args, ImportOptions &import)
{
    if (args.has("format")) {
        import.format = parseTraceFormat(args.value("format").toStdString());
        if (!import.format)
            return failImport(QStringLiteral("unknown format '%1' (one of %2)")
                                  .arg(args.value("format"), q(traceFormatNames())),
                              2);
    }
    import.skipFailed = args.has("skip-failed");
    if (args.has("block-tokens")) {
        bool ok = false;
        import.blockTokens = args.value("block-tokens").toInt(&ok);
        if (!ok || import.blockTokens < 1 || import.blockTokens > (1 << 20))
            return failImport(
                QStringLiteral("--block-tokens must be a whole number of tokens in [1, 1048576], got '%1'")
                    .arg(args.value("block-tokens")),
                2);
    }
    return kGoOn;
}

// --reject-bad-rows, --name, --repeat-to.
int readRowOptions(CommandArgs &args, ImportOptions &import)
{
    import.badRows = args.has("reject-bad-rows") ? BadRowPolicy::RejectFile : BadRowPolicy::SkipBadRows;
    import.name = args.value("name").toStdString();
    if (!args.has("repeat-to"))
        return kGoOn;
    const QString to = args.value("repeat-to");
    const auto length = parseSpan(to.toStdString(), fromSeconds(366 * 86400.0));
    if (!length)
        return failImport(
            QStringLiteral("--repeat-to must be a length such as 7d or 24h (at most a year), not '%1'")
                .arg(to),
            2);
    import.repeatTo = *length;
    return kGoOn;
}

void printImportJson(const ImportResult &r)
{
    const TraceInfo &t = r.trace;
    nlohmann::json errors = nlohmann::json::array();
    for (const TraceParseError &e : r.errors)
        errors.push_back({{"line", e.line}, {"message", e.message}});
    const nlohmann::json j{{"trace_id", t.id},
                           {"name", t.name},
                           {"format", traceFormatName(t.format)},
                           {"rows", t.rows},
                           {"skipped_rows", t.skippedRows},
                           {"duration_s", t.durationS},
                           {"failed_rows", r.failedRows},
                           {"block_tokens", t.blockTokens},
                           {"prefix_blocks", r.prefix.blocks},
                           {"reused_prefix_blocks", r.prefix.reusedBlocks},
                           {"prompt_tokens", r.share.promptTokens},
                           {"reusable_prefix_tokens", r.share.reusableTokens},
                           {"reusable_prefix_share", r.share.share()},
                           {"errors", errors}};
    QTextStream(stdout) << q(j.dump(2)) << "\n";
}

void printImportText(const ImportResult &r, const ImportOptions &import, bool sample)
{
    const TraceInfo &t = r.trace;
    QTextStream out(stdout);
    out << QStringLiteral(
               "imported trace %1 '%2' (%3 format): %4 requests over %5 s, %6 malformed rows skipped\n")
               .arg(t.id)
               .arg(q(t.name), q(std::string(traceFormatName(t.format))))
               .arg(t.rows)
               .arg(t.durationS, 0, 'f', 1)
               .arg(t.skippedRows);
    if (r.failedRows)
        out << QStringLiteral("%1 failed requests (0 response tokens) %2\n")
                   .arg(r.failedRows)
                   .arg(import.skipFailed ? "dropped (--skip-failed)" : "kept as prefill-only arrivals");
    if (t.blockTokens)
        out << QStringLiteral(
                   "prefix blocks: %1 of %2 tokens, %3 reused from earlier requests (%4%: a prefix cache's "
                   "hit ratio with unbounded capacity)\n")
                   .arg(r.prefix.blocks)
                   .arg(t.blockTokens)
                   .arg(r.prefix.reusedBlocks)
                   .arg(100.0 * r.prefix.reuseRatio(), 0, 'f', 1);
    if (r.share.reusableTokens)
        out << QStringLiteral("reusable prefix: %1 of %2 prompt tokens (%3%) are in blocks seen before%4\n")
                   .arg(r.share.reusableTokens)
                   .arg(r.share.promptTokens)
                   .arg(100.0 * r.share.share(), 0, 'f', 1)
                   .arg(t.format == TraceFormat::MultiTurn ? " (conversations resend their context)" : "");
    if (sample) // one step from here to something on the charts
        out << QStringLiteral(
                   "replay it (how batches form on this traffic, on the virtual clock: about a second):\n"
                   "  batchpilot replay %1 --trace --virtual --model builtin:echo\n")
                   .arg(t.id);
}

} // namespace

int runImportTrace(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("import-trace"));
    if (!args.error().isEmpty())
        return failImport(args.error(), 2);
    const bool sample = args.has("sample");
    if (args.positional().size() != (sample ? 0 : 1))
        return failImport(sample
                              ? "--sample imports the bundled sample trace: give no FILE with it"
                              : "usage: batchpilot import-trace FILE|--sample [--format F] [--skip-failed] "
                                "[--reject-bad-rows] "
                                "[--name NAME]",
                          2);
    // --sample: the bundled trace, from the installed or the build tree.
    const QString file = sample ? sampleTracePath() : args.positional().front();
    if (file.isEmpty())
        return failImport("the bundled sample trace is not installed (" +
                          dataSearchDescription(QString::fromLatin1(kSampleTraceFile)) + ")");
    ImportOptions import;
    if (const int code = readImportOptions(args, import); code != kGoOn)
        return code;
    auto store = TraceStore::open(options.db.toStdString());
    if (!store)
        return failImport(q(store.status().message()));
    if (const int code = readRowOptions(args, import); code != kGoOn)
        return code;
    auto r = (*store)->importTrace(file.toStdString(), import);
    if (!r)
        return failImport(q(r.status().message()));
    if (args.has("json")) {
        printImportJson(*r);
        return 0;
    }
    printImportText(*r, import, sample);
    QTextStream err(stderr);
    for (const TraceParseError &e : r->errors)
        err << (e.line ? QStringLiteral("  line %1: %2\n").arg(e.line).arg(q(e.message))
                       : QStringLiteral("  ... %1\n").arg(q(e.message)));
    return 0;
}

int runTraces(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("traces"));
    if (!args.error().isEmpty() || !args.positional().isEmpty())
        return failCommand("traces",
                           args.error().isEmpty() ? "usage: batchpilot traces [--json]" : args.error(), 2);
    auto store = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!store)
        return failCommand("traces", q(store.status().message()));
    auto list = (*store)->traces();
    if (!list)
        return failCommand("traces", q(list.status().message()));
    if (args.has("json")) {
        nlohmann::json j = nlohmann::json::array();
        for (const TraceInfo &t : *list)
            j.push_back({{"id", t.id},
                         {"name", t.name},
                         {"source_path", t.sourcePath},
                         {"format", traceFormatName(t.format)},
                         {"rows", t.rows},
                         {"skipped_rows", t.skippedRows},
                         {"duration_s", t.durationS},
                         {"block_tokens", t.blockTokens},
                         {"imported_at_us", t.importedAtUs}});
        QTextStream(stdout) << q(j.dump(2)) << "\n";
        return 0;
    }
    QList<QStringList> rows;
    for (const TraceInfo &t : *list)
        rows << QStringList{QString::number(t.id),
                            q(t.name),
                            q(std::string(traceFormatName(t.format))),
                            QString::number(t.rows),
                            QString::number(t.skippedRows),
                            QString::number(t.durationS, 'f', 1),
                            wallTime(t.importedAtUs)};
    QTextStream out(stdout);
    if (rows.isEmpty())
        out << "no traces in " << options.db << " (import one with: batchpilot import-trace FILE.csv)\n";
    else
        out << table({"ID", "NAME", "FORMAT", "REQUESTS", "SKIPPED", "SPAN_S", "IMPORTED"}, rows);
    return 0;
}

int runSessions(const AppOptions &options)
{
    CommandArgs args(options.commandArgs, commandOptions("sessions"));
    if (!args.error().isEmpty() || !args.positional().isEmpty())
        return failCommand("sessions",
                           args.error().isEmpty() ? "usage: batchpilot sessions [--json]" : args.error(), 2);
    auto store = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!store)
        return failCommand("sessions", q(store.status().message()));
    auto list = (*store)->sessions();
    if (!list)
        return failCommand("sessions", q(list.status().message()));
    if (args.has("json")) {
        nlohmann::json j = nlohmann::json::array();
        for (const SessionInfo &s : *list)
            j.push_back(
                {{"id", s.id},
                 {"kind", s.kind},
                 {"started_at_us", s.startedAtUs},
                 {"ended_at_us", s.endedAtUs ? nlohmann::json(*s.endedAtUs) : nlohmann::json(nullptr)},
                 {"model", s.model},
                 {"device", s.device},
                 {"requests", s.requestCount},
                 {"batches", s.batchCount},
                 {"source_session_id", s.sourceSessionId ? nlohmann::json(*s.sourceSessionId) : nullptr},
                 {"source_trace_id", s.sourceTraceId ? nlohmann::json(*s.sourceTraceId) : nullptr},
                 {"dropped_rows", s.droppedRows},
                 {"logging_error", s.loggingError},
                 {"target_url", s.targetUrl},
                 {"notes", s.notes}});
        QTextStream(stdout) << q(j.dump(2)) << "\n";
        return 0;
    }
    QList<QStringList> rows;
    for (const SessionInfo &s : *list) {
        const QString length = s.endedAtUs
                                   ? QString::number(double(*s.endedAtUs - s.startedAtUs) / 1e6, 'f', 1)
                                   : QStringLiteral("unended");
        const QString source = s.sourceSessionId ? QStringLiteral("session %1").arg(*s.sourceSessionId)
                               : s.sourceTraceId ? QStringLiteral("trace %1").arg(*s.sourceTraceId)
                                                 : QStringLiteral("-");
        QString notes = q(s.notes);
        if (!s.targetUrl.empty()) // remote sessions: where the requests went
            notes = QStringLiteral("target %1").arg(q(s.targetUrl)) + (notes.isEmpty() ? "" : "; ") + notes;
        if (!s.loggingError.empty())
            notes += (notes.isEmpty() ? "" : "; ") + QStringLiteral("logging stopped");
        rows << QStringList{QString::number(s.id),
                            q(s.kind),
                            wallTime(s.startedAtUs),
                            length,
                            q(s.model),
                            q(s.device),
                            QString::number(s.requestCount),
                            QString::number(s.batchCount),
                            source,
                            QString::number(s.droppedRows),
                            notes};
    }
    QTextStream out(stdout);
    if (rows.isEmpty())
        out << "no sessions in " << options.db << "\n";
    else
        out << table({"ID", "KIND", "STARTED", "LENGTH_S", "MODEL", "DEVICE", "REQUESTS", "BATCHES", "SOURCE",
                      "DROPPED", "NOTES"},
                     rows);
    return 0;
}

} // namespace bp::app
