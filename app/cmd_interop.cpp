#include "cmd_interop.h"
#include "cli_text.h"

#include "command_args.h"
#include "commands.h"
#include "engine_host.h"

#include "engine/config/config_export.h"
#include "engine/config/config_import.h"
#include "engine/config/config_json.h"
#include "engine/store/trace_store.h"
#include "engine/workload/trace_export.h"

#include <QFile>
#include <QTextStream>

#include <sstream>

namespace bp::app {

namespace {

// "-o FILE" is the conventional spelling; CommandArgs knows only "--" flags.
QStringList normalized(const QStringList &args)
{
    QStringList out;
    for (const QString &a : args)
        out << (a == QLatin1String("-o") ? QStringLiteral("--output") : a);
    return out;
}

// Writes `text` to --output FILE, or stdout. Empty string on success.
QString writeOutput(const CommandArgs &args, const std::string &text)
{
    if (!args.has("output")) {
        QTextStream out(stdout);
        out << q(text);
        return {};
    }
    QFile file(args.value("output"));
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) ||
        file.write(text.data(), qint64(text.size())) != qint64(text.size()) || !file.flush())
        return QStringLiteral("cannot write '%1': %2").arg(args.value("output"), file.errorString());
    return {};
}

std::optional<std::int64_t> parseId(const QString &s)
{
    bool ok = false;
    const qint64 v = s.toLongLong(&ok);
    return ok && v > 0 ? std::optional<std::int64_t>(v) : std::nullopt;
}

} // namespace

int runExportConfig(const AppOptions &options)
{
    const QString name = QStringLiteral("export-config");
    const QString usage =
        QStringLiteral("usage: batchpilot export-config --format %1 (--session ID | --config FILE) "
                       "[-o FILE]")
            .arg(q(serverFormatNames()).replace(", ", "|"));
    CommandArgs args(normalized(options.commandArgs), commandOptions(name));
    if (!args.error().isEmpty())
        return failCommand(name, args.error() + "\n" + usage, 2);
    if (!args.positional().isEmpty() || !args.has("format"))
        return failCommand(name, usage, 2);
    const auto format = parseServerFormat(args.value("format").toStdString());
    if (!format)
        return failCommand(name,
                           QStringLiteral("unknown format '%1' (one of %2)")
                               .arg(args.value("format"), q(serverFormatNames())),
                           2);
    const bool fromSession = args.has("session");
    if (fromSession == !options.config.isEmpty())
        return failCommand(name,
                           QStringLiteral("give exactly one of --session ID and --config FILE\n") + usage, 2);

    BatchingConfig config;
    QString source;
    if (fromSession) {
        const auto id = parseId(args.value("session"));
        if (!id)
            return failCommand(
                name, QStringLiteral("--session takes a session id, got '%1'").arg(args.value("session")), 2);
        auto store = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
        if (!store)
            return failCommand(name, q(store.status().message()));
        auto history = (*store)->configHistory(*id);
        if (!history)
            return failCommand(name, q(history.status().message()));
        if (history->empty()) {
            if (auto s = (*store)->session(*id); !s)
                return failCommand(name, q(s.status().message()));
            return failCommand(name, QStringLiteral("session %1 recorded no config").arg(*id));
        }
        // The config in effect when the session ended: what it was tuned to.
        config = history->back().config;
        source = QStringLiteral("session %1, config version %2").arg(*id).arg(history->back().version);
    } else {
        auto loaded = batchingConfigFor(options);
        if (!loaded)
            return failCommand(name, q(loaded.status().message()));
        config = *loaded;
        source = options.config;
    }
    const ExportedConfig out = exportConfig(config, *format);
    if (QString e = writeOutput(args, "# From " + source.toStdString() + "\n" + out.text); !e.isEmpty())
        return failCommand(name, e);
    if (args.has("output"))
        QTextStream(stderr) << QStringLiteral(
                                   "wrote %1 settings to %2: %3 knobs mapped, %4 listed as having no "
                                   "equivalent\n")
                                   .arg(args.value("format"), args.value("output"))
                                   .arg(out.mapped.size())
                                   .arg(out.unmapped.size());
    return 0;
}

int runImportConfig(const AppOptions &options)
{
    const QString name = QStringLiteral("import-config");
    const QString usage =
        QStringLiteral("usage: batchpilot import-config FILE [--format %1] [-o FILE] [--json]")
            .arg(q(serverFormatNames()).replace(", ", "|"));
    CommandArgs args(normalized(options.commandArgs), commandOptions(name));
    if (!args.error().isEmpty())
        return failCommand(name, args.error() + "\n" + usage, 2);
    if (args.positional().size() != 1)
        return failCommand(name, usage, 2);
    const QString path = args.positional().front();
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return failCommand(name, QStringLiteral("cannot read '%1': %2").arg(path, file.errorString()));
    const QByteArray bytes = file.readAll();
    const std::string_view text(bytes.constData(), std::size_t(bytes.size()));
    std::optional<ServerFormat> format;
    if (args.has("format")) {
        format = parseServerFormat(args.value("format").toStdString());
        if (!format)
            return failCommand(name,
                               QStringLiteral("unknown format '%1' (one of %2)")
                                   .arg(args.value("format"), q(serverFormatNames())),
                               2);
    } else {
        format = detectServerFormat(text);
        if (!format)
            return failCommand(
                name,
                QStringLiteral("%1: cannot tell which server's syntax this is: give --format (one of %2)")
                    .arg(path, q(serverFormatNames())));
    }
    auto imported = importConfig(text, *format);
    if (!imported)
        return failCommand(name, path + QStringLiteral(": ") + q(imported.status().message()));
    const nlohmann::json knobs = knobValues(imported->config, imported->knobs);
    nlohmann::json doc = toJson(imported->config);
    if (args.has("json"))
        doc = {{"format", std::string(serverFormatName(*format))},
               {"file", path.toStdString()},
               {"knobs", knobs},
               {"settings", imported->settings},
               {"notes", imported->notes},
               {"config", doc}};
    if (QString e = writeOutput(args, doc.dump(2) + "\n"); !e.isEmpty())
        return failCommand(name, e);
    QTextStream err(stderr);
    err << QStringLiteral("read %1 settings from %2: %3 BatchPilot knobs set\n")
               .arg(q(std::string(serverFormatName(*format))), path)
               .arg(imported->knobs.size());
    for (const auto &[key, value] : knobs.items())
        err << QStringLiteral("  %1 = %2\n").arg(q(key), q(value.dump()));
    QStringList other;
    for (const auto &[key, value] : imported->settings.items())
        other << q(key) + QLatin1Char('=') + q(value.is_string() ? value.get<std::string>() : value.dump());
    if (!other.isEmpty())
        err << QStringLiteral("the server's settings as read: %1\n").arg(other.join(QStringLiteral(", ")));
    for (const std::string &n : imported->notes)
        err << QStringLiteral("note: %1\n").arg(q(n));
    return 0;
}

int runExportTrace(const AppOptions &options)
{
    const QString name = QStringLiteral("export-trace");
    const QString usage =
        QStringLiteral("usage: batchpilot export-trace ID [--trace] [--format mooncake] [-o FILE]");
    CommandArgs args(normalized(options.commandArgs), commandOptions(name));
    if (!args.error().isEmpty())
        return failCommand(name, args.error() + "\n" + usage, 2);
    if (args.positional().size() != 1)
        return failCommand(name, usage, 2);
    if (args.value("format", QStringLiteral("mooncake")) != QLatin1String("mooncake"))
        return failCommand(name,
                           QStringLiteral("unknown format '%1' (mooncake is the one export format)")
                               .arg(args.value("format")),
                           2);
    const auto id = parseId(args.positional().front());
    if (!id)
        return failCommand(
            name, QStringLiteral("ID must be a positive integer, got '%1'").arg(args.positional().front()),
            2);
    auto store = TraceStore::open(options.db.toStdString(), TraceStore::OpenMode::MustExist);
    if (!store)
        return failCommand(name, q(store.status().message()));

    std::vector<TraceRow> rows;
    std::vector<PrefixBlocks> hashIds;
    std::optional<TraceInfo> trace;
    if (args.has("trace")) {
        auto t = (*store)->trace(*id);
        if (!t)
            return failCommand(name, q(t.status().message()));
        trace = *t;
        auto r = (*store)->traceRows(*id);
        if (!r)
            return failCommand(name, q(r.status().message()));
        rows = std::move(*r);
        auto h = (*store)->traceHashIds(*id);
        if (!h)
            return failCommand(name, q(h.status().message()));
        hashIds = std::move(*h);
    } else {
        auto r = (*store)->sessionArrivals(*id);
        if (!r)
            return failCommand(name, q(r.status().message()));
        rows = std::move(*r);
    }
    std::ostringstream text;
    const MooncakeExportStats stats = writeMooncakeJsonl(text, rows, hashIds);
    if (QString e = writeOutput(args, text.str()); !e.isEmpty())
        return failCommand(name, e);
    QTextStream err(stderr);
    err << QStringLiteral("exported %1 requests of %2 %3 as Mooncake JSON Lines%4; hash ids: %5\n")
               .arg(stats.rows)
               .arg(args.has("trace") ? "trace" : "session")
               .arg(*id)
               .arg(args.has("output") ? " to " + args.value("output") : QString())
               .arg(stats.syntheticHashIds
                        ? QStringLiteral("one fresh id per 512-token block (no prefix sharing "
                                         "is known for these requests)")
                        : QStringLiteral("the trace's own"));
    // The bundled and public Azure traces are CC-BY 4.0: what is derived from
    // them carries the credit.
    if (trace && trace->format == TraceFormat::Azure)
        err << "derived from an Azure LLM inference trace (Azure Public Dataset, CC-BY 4.0): credit it where "
               "you "
               "ship or publish it (2023: Patel et al., \"Splitwise: Efficient generative LLM inference "
               "using phase "
               "splitting\", ISCA 2024; 2024: Stojkovic et al., \"DynamoLLM\", HPCA 2025)\n";
    return 0;
}

} // namespace bp::app
