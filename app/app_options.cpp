#include "app_options.h"

#include "commands.h"

#include <QCoreApplication>
#include <QDir>
#include <QStandardPaths>

namespace bp::app {

namespace {
const QStringList kValueOptions = {"bind", "port", "token", "db", "model", "device", "preset", "threads", "config",
                                   "max-body-bytes", "spin-us"};

QString helpText()
{
    const QString usage = QStringLiteral(
        "usage: batchpilot [options]                 the console\n"
        "       batchpilot --headless [options]      serve the REST endpoint without a window\n"
        "       batchpilot COMMAND [args] [options]\n\n"
        "options:\n"
        "  --headless            no window; prints 'listening on http://HOST:PORT' when ready\n"
        "  --bind ADDR           REST bind address (default 127.0.0.1)\n"
        "  --port N              REST port (default 8321; 0 = any free port)\n"
        "  --token T             bearer token (required off loopback; or BATCHPILOT_TOKEN)\n"
        "  --max-body-bytes N    REST request body limit (default 1048576; larger gets 413)\n"
        "  --db PATH             trace database (default in the user's data directory)\n"
        "  --no-log              serve without recording requests (no trace database)\n"
        "  --model NAME|FILE.pt  builtin:tiny-decoder (default), builtin:tiny-encoder, builtin:echo, or TorchScript\n"
        "  --device D            auto (default), cpu, cuda, cuda:N\n"
        "  --preset P            size preset of the built-in models (default small)\n"
        "  --threads N           torch threads (default: all cores)\n"
        "  --spin-us N           how long an idle executor spins before sleeping (default 150; 0 = never)\n"
        "  --config FILE.json    initial batching config\n"
        "  --version, --help\n");
    // The subcommands, from their one registry (the man page and the shell
    // completion read this list).
    QString text = QStringLiteral("\ncommands:\n");
    for (const Command &c : commands())
        text += QStringLiteral("  %1 %2\n").arg(c.name.leftJustified(21), c.summary);
    return usage + text;
}
} // namespace

ParseOutcome parseAppOptions(const QStringList &arguments)
{
    ParseOutcome out;
    AppOptions o;
    bool tokenGiven = false;
    bool noLog = false;
    for (int i = 1; i < arguments.size(); ++i) {
        QString a = arguments[i];
        if (!o.command.isEmpty() && !a.startsWith("--")) {
            o.commandArgs << a;
            continue;
        }
        if (a == "--help" || a == "-h") {
            out.exitText = helpText();
            return out;
        }
        if (a == "--version") {
            out.exitText = QStringLiteral("batchpilot %1\n").arg(QCoreApplication::applicationVersion());
            return out;
        }
        if (a == "--headless") {
            o.headless = true;
            continue;
        }
        if (a == "--no-log") {
            noLog = true;
            continue;
        }
        if (a.startsWith("--")) {
            QString key = a.mid(2), value;
            const int eq = key.indexOf('=');
            if (eq >= 0) {
                value = key.mid(eq + 1);
                key = key.left(eq);
            } else if (kValueOptions.contains(key)) {
                if (i + 1 >= arguments.size()) {
                    out.error = QStringLiteral("option --%1 needs a value").arg(key);
                    return out;
                }
                value = arguments[++i];
            }
            if (!kValueOptions.contains(key)) {
                if (!o.command.isEmpty()) { // subcommand-specific flag: pass it on
                    o.commandArgs << a;
                    continue;
                }
                out.error = QStringLiteral("unknown option --%1 (see --help)").arg(key);
                return out;
            }
            bool ok = true;
            if (key == "bind") o.bind = value;
            else if (key == "port") {
                const int p = value.toInt(&ok);
                if (!ok || p < 0 || p > 65535) {
                    out.error = QStringLiteral("--port must be 0..65535, got '%1'").arg(value);
                    return out;
                }
                o.port = quint16(p);
            } else if (key == "token") { o.token = value; tokenGiven = true; }
            else if (key == "max-body-bytes") {
                o.maxBodyBytes = value.toLongLong(&ok);
                if (!ok || o.maxBodyBytes < 1) {
                    out.error = QStringLiteral("--max-body-bytes must be a positive integer, got '%1'").arg(value);
                    return out;
                }
            }
            else if (key == "db") o.db = value;
            else if (key == "model") o.model = value;
            else if (key == "device") o.device = value;
            else if (key == "preset") o.preset = value;
            else if (key == "config") o.config = value;
            else if (key == "spin-us") {
                o.spinUs = value.toInt(&ok);
                if (!ok || o.spinUs < 0 || o.spinUs > 100'000) {
                    out.error = QStringLiteral("--spin-us must be 0..100000, got '%1'").arg(value);
                    return out;
                }
            }
            else if (key == "threads") {
                o.threads = value.toInt(&ok);
                if (!ok || o.threads < 0 || o.threads > 256) {
                    out.error = QStringLiteral("--threads must be 0..256, got '%1'").arg(value);
                    return out;
                }
            }
            continue;
        }
        if (o.command.isEmpty()) {
            o.command = a;
            continue;
        }
        o.commandArgs << a;
    }
    if (!tokenGiven)
        o.token = qEnvironmentVariable("BATCHPILOT_TOKEN");
    if (noLog && o.command.isEmpty())
        o.db.clear(); // serve without recording: no trace database at all
    else if (o.db.isEmpty())
        o.db = defaultDatabasePath();
    out.options = o;
    return out;
}

QString defaultDatabasePath()
{
    QString dir = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    if (dir.isEmpty())
        dir = QDir::homePath() + "/.local/share/batchpilot";
    return dir + "/batchpilot.sqlite";
}

} // namespace bp::app
