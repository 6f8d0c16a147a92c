// Command-line options shared by the console, --headless and the subcommands.
#pragma once

#include "command_args.h"

#include <QString>
#include <QStringList>

#include <optional>

namespace bp::app {

struct AppOptions {
    bool headless = false;
    QString bind = QStringLiteral("127.0.0.1");
    quint16 port = 8321;            // 0 = any free port
    QString token;                  // bearer token; required off loopback (or BATCHPILOT_TOKEN)
    qint64 maxBodyBytes = 1 << 20;  // REST request body limit (413 above it)
    QString db;                     // default: the user's data directory; empty after --no-log
    QString model = QStringLiteral("builtin:tiny-decoder");
    bool modelGiven = false;        // --model was on the command line (a remote replay needs the server's name)
    QString device = QStringLiteral("auto");
    QString preset = QStringLiteral("small");
    QString dtype = QStringLiteral("auto"); // auto | float32 | bfloat16 | float16 (ModelSpec::dtype)
    bool cudaGraphs = true;         // decode steps as CUDA graphs (ModelSpec::cudaGraphs)
    int threads = 0;                // torch threads, 0 = all cores
    int vocabSize = 0;              // TorchScript: token ids accepted, 0 = from the model
    int maxLength = 0;              // TorchScript: longest input, 0 = from the model
    int spinUs = -1;                // executor idle spin (µs); -1 = the engine default
    QString config;                 // batching config JSON file
    QString command;                // subcommand, empty for the console / headless
    QStringList commandArgs;        // everything after the subcommand
};

// Parses argv. On error returns nullopt and sets `error` to a message for
// the user; `--help` / `--version` set `exitNow` with the text to print.
struct ParseOutcome {
    std::optional<AppOptions> options;
    QString error;
    QString exitText; // non-empty: print and exit 0
};
ParseOutcome parseAppOptions(const QStringList &arguments);

// The options of `batchpilot` itself (the console, --headless; every
// subcommand honours them too). parseAppOptions accepts exactly these, and
// --help prints them.
const QList<OptionSpec> &appOptionSpecs();

// The default trace database: <AppDataLocation>/batchpilot.sqlite
QString defaultDatabasePath();

} // namespace bp::app
