// Subcommands of `batchpilot` that need no window. Each lives in its own
// file and is listed once in commands.cpp.
#pragma once

#include "app_options.h"
#include "command_args.h"

#include <functional>
#include <vector>

namespace bp::app {

struct Command {
    QString name;
    QString summary;
    QString synopsis;          // after "batchpilot NAME", e.g. "ID [OPTIONS]"
    QList<OptionSpec> options; // what its CommandArgs accepts (--help lists them)
    // Runs inside a QCoreApplication; returns the process exit code. Writes
    // results to stdout, errors to stderr.
    std::function<int(const AppOptions &options)> run;
    // Paints some of its outputs (PDF reports): in a build with Qt Gui it
    // runs inside a QGuiApplication instead (fonts), on the offscreen
    // platform unless QT_QPA_PLATFORM says otherwise. In a build without
    // (BATCHPILOT_GUI=OFF) it runs inside a QCoreApplication and refuses
    // those outputs itself, saying why; its other outputs work in both.
    bool paints = false;
    // Needs Qt Gui for everything it does: a build without it refuses the
    // command before it runs, as it refuses the console (entry/console.h).
    // No command needs it today; `report` only paints.
    bool needsGui = false;
};

const std::vector<Command> &commands();
const Command *findCommand(const QString &name);
// The options of a listed command (empty for an unknown name).
QList<OptionSpec> commandOptions(const QString &name);
// `batchpilot NAME --help`: usage line, summary, its options, the common ones.
QString commandHelp(const Command &command);

} // namespace bp::app
