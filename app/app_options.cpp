#include "app_options.h"

#include <algorithm>

#include "commands.h"

#include <QCoreApplication>
#include <QDir>
#include <QStandardPaths>

namespace bp::app {

const QList<OptionSpec> &appOptionSpecs()
{
    static const QList<OptionSpec> specs = {
        {"headless", "", "no window; prints 'listening on http://HOST:PORT' when ready"},
        {"bind", "ADDR", "REST bind address (default 127.0.0.1)"},
        {"port", "N", "REST port (default 8321; 0 = any free port)"},
        {"token", "T", "bearer token (required off loopback; or BATCHPILOT_TOKEN)"},
        {"max-body-bytes", "N", "REST request body limit (default 1048576; larger gets 413)"},
        {"db", "PATH", "trace database (default in the user's data directory)"},
        {"no-log", "", "serve without recording requests (no trace database)"},
        {"model", "NAME|FILE.pt",
         "builtin:tiny-decoder (default), builtin:tiny-encoder, builtin:echo, or TorchScript"},
        {"device", "D", "auto (default), cpu, cuda, cuda:N"},
        {"preset", "P", "size preset of the built-in models (default small)"},
        {"dtype", "auto|float32|bfloat16|float16",
         "the model's weights and activations (default auto: bfloat16 on CUDA, float32 on the CPU)"},
        {"cuda-graphs", "on|off", "replay decode steps as CUDA graphs, CUDA only (default on)"},
        {"threads", "N", "torch threads (default 0 = all cores)"},
        {"vocab-size", "N", "TorchScript: token ids the model accepts (default: read from the model)"},
        {"max-length", "N", "TorchScript: longest input in tokens (default: read from the model, else 512)"},
        {"spin-us", "N", "how long an idle executor spins before sleeping (default 150; 0 = never)"},
        {"config", "FILE.json", "initial batching config"},
        {"version", "", "print the version and exit"},
        {"help", "", "print this help and exit; COMMAND --help prints the command's options"},
    };
    return specs;
}

namespace {

bool takesValue(const QString &key)
{
    for (const OptionSpec &o : appOptionSpecs())
        if (o.name == key)
            return !o.value.isEmpty();
    return false;
}

bool isAppOption(const QString &key)
{
    for (const OptionSpec &o : appOptionSpecs())
        if (o.name == key)
            return true;
    return false;
}

QString helpText()
{
    // Names padded to the longest + 2, so that help2man and the bash
    // completion read every row as "name  summary".
    qsizetype width = 0;
    for (const Command &c : commands())
        width = std::max(width, c.name.size() + 2);
    QString commandList;
    for (const Command &c : commands())
        commandList += QStringLiteral("  %1%2\n").arg(c.name.leftJustified(width), c.summary);
    return QStringLiteral("Usage: batchpilot [OPTIONS]\n"
                          "  or:  batchpilot --headless [OPTIONS]\n"
                          "  or:  batchpilot COMMAND [ARGS] [OPTIONS]\n"
                          "The BatchPilot console (a window), or with --headless the REST endpoint alone.\n\n"
                          "Options:\n%1\nCommands (batchpilot COMMAND --help for their options):\n%2")
        .arg(formatOptions(appOptionSpecs()), commandList);
}

} // namespace

namespace {

// A common option's value checked and set; the error, or empty.
QString setNumber(AppOptions &o, const QString &key, const QString &value)
{
    bool ok = true;
    if (key == "port") {
        const int p = value.toInt(&ok);
        if (!ok || p < 0 || p > 65535)
            return QStringLiteral("--port must be 0..65535, got '%1'").arg(value);
        o.port = quint16(p);
    } else if (key == "max-body-bytes") {
        o.maxBodyBytes = value.toLongLong(&ok);
        if (!ok || o.maxBodyBytes < 1)
            return QStringLiteral("--max-body-bytes must be a positive integer, got '%1'").arg(value);
    } else if (key == "spin-us") {
        o.spinUs = value.toInt(&ok);
        if (!ok || o.spinUs < 0 || o.spinUs > 100'000)
            return QStringLiteral("--spin-us must be 0..100000, got '%1'").arg(value);
    } else if (key == "vocab-size" || key == "max-length") {
        const int v = value.toInt(&ok);
        if (!ok || v < 1 || v > 100'000'000)
            return QStringLiteral("--%1 must be a positive integer, got '%2'").arg(key, value);
        (key == "vocab-size" ? o.vocabSize : o.maxLength) = v;
    } else if (key == "threads") {
        o.threads = value.toInt(&ok);
        if (!ok || o.threads < 0 || o.threads > 256)
            return QStringLiteral("--threads must be 0..256, got '%1'").arg(value);
    }
    return {};
}

QString setOption(AppOptions &o, const QString &key, const QString &value)
{
    if (key == "bind")
        o.bind = value;
    else if (key == "token")
        o.token = value;
    else if (key == "db")
        o.db = value;
    else if (key == "model") {
        o.model = value;
        o.modelGiven = true;
    } else if (key == "device")
        o.device = value;
    else if (key == "preset")
        o.preset = value;
    else if (key == "config")
        o.config = value;
    else if (key == "dtype") {
        static const QStringList dtypes = {"auto", "float32", "bfloat16", "float16"};
        if (!dtypes.contains(value))
            return QStringLiteral("--dtype must be auto, float32, bfloat16 or float16, got '%1'").arg(value);
        o.dtype = value;
    } else if (key == "cuda-graphs") {
        if (value != "on" && value != "off")
            return QStringLiteral("--cuda-graphs must be on or off, got '%1'").arg(value);
        o.cudaGraphs = value == "on";
    } else
        return setNumber(o, key, value);
    return {};
}

// --help: the top level's, a command's, or an unknown command's error.
ParseOutcome helpFor(const QString &command)
{
    ParseOutcome out;
    if (command.isEmpty())
        out.exitText = helpText();
    else if (const Command *c = findCommand(command))
        out.exitText = commandHelp(*c);
    else
        out.error = QStringLiteral("unknown command '%1' (see --help)").arg(command);
    return out;
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
        if (a == "--help" || a == "-h")
            return helpFor(o.command);
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
            } else if (takesValue(key)) {
                if (i + 1 >= arguments.size()) {
                    out.error = QStringLiteral("option --%1 needs a value").arg(key);
                    return out;
                }
                value = arguments[++i];
            }
            if (!isAppOption(key) || !takesValue(key)) {
                if (!o.command.isEmpty()) { // subcommand-specific flag: pass it on
                    o.commandArgs << a;
                    continue;
                }
                out.error = QStringLiteral("unknown option --%1 (see --help)").arg(key);
                return out;
            }
            out.error = setOption(o, key, value);
            if (!out.error.isEmpty())
                return out;
            tokenGiven = tokenGiven || key == "token";
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
