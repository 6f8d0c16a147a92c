// Subcommands of `batchpilot` that need no window. Each lives in its own
// file and is listed once in commands.cpp.
#pragma once

#include "app_options.h"

#include <functional>
#include <vector>

namespace bp::app {

struct Command {
    QString name;
    QString summary;
    // Runs inside a QCoreApplication; returns the process exit code. Writes
    // results to stdout, errors to stderr.
    std::function<int(const AppOptions &options)> run;
    // Runs inside a QGuiApplication instead (fonts, painting: PDF reports),
    // on the offscreen platform unless QT_QPA_PLATFORM says otherwise.
    bool needsGui = false;
};

const std::vector<Command> &commands();
const Command *findCommand(const QString &name);

} // namespace bp::app
