// What main() needs from Qt Gui and the console (ui/), in two
// implementations, one per build: console.cpp (BATCHPILOT_GUI=ON: Qt
// Widgets, the console window) and console_absent.cpp (OFF: Qt Core only).
// main.cpp includes no ui/ header and no Qt Gui header, so it is the same
// file in both builds.
#pragma once

#include "app/app_options.h"
#include "app/engine_host.h"
#include "app/rest/rest_server.h"

#include <QCoreApplication>
#include <QString>

#include <memory>

namespace bp::entry {

enum class AppKind {
    Window, // the console: a QApplication
    Paints, // no window, paints into files (PDF reports): a QGuiApplication
    Core,   // neither: a QCoreApplication
};

// False in a build without Qt Gui (BATCHPILOT_GUI=OFF): no console, no
// painting.
bool hasGui();

// The application object for `kind`. A build without Qt Gui always makes a
// QCoreApplication (main() has refused what needs more by then).
std::unique_ptr<QCoreApplication> createApplication(AppKind kind, int &argc, char **argv);

// The console on `host`'s engine until its window closes; then stops the
// endpoint (or the engine) and returns the exit code. `endpoint` is null
// when it did not start, `restProblem` says why. Only with hasGui().
int runConsole(QCoreApplication &app, const app::AppOptions &options, app::EngineHostResult &host,
               rest::RestServer *endpoint, const QString &restProblem);

} // namespace bp::entry
