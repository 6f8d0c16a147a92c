// batchpilot: the console, --headless serving, and the window-less
// subcommands (see app/commands.cpp). The composition root: the only code
// above app/, ui/, app/rest and app/report, and the only one that includes
// ui/ headers (cmake/check_layering.cmake).
#include "app/app_options.h"
#include "app/commands.h"
#include "app/data_paths.h"
#include "app/engine_bridge.h"
#include "app/engine_host.h"
#include "app/rest/serve.h"

#include "ui/demo_script.h"
#include "ui/main_window.h"

#include <QApplication>
#include <QCoreApplication>
#include <QGuiApplication>
#include <QTextStream>

#include <cstdio>
#include <memory>

namespace {

void setIdentity()
{
    QCoreApplication::setOrganizationName("BatchPilot");
    QCoreApplication::setApplicationName("batchpilot");
    QCoreApplication::setApplicationVersion(BATCHPILOT_VERSION);
}

int fail(const QString &message)
{
    QTextStream(stderr) << "batchpilot: " << message << "\n";
    return 2;
}

} // namespace

int main(int argc, char **argv)
{
    QStringList arguments;
    for (int i = 0; i < argc; ++i)
        arguments << QString::fromLocal8Bit(argv[i]);
    bool windowless = false;
    bool headless = false;
    bool guiCommand = false; // paints (PDF reports) without a window: QGuiApplication, offscreen
    {
        // Parse before any QApplication exists: subcommands and --headless
        // must run without a display.
        setIdentity();
        auto parsed = bp::app::parseAppOptions(arguments);
        windowless = !parsed.options || parsed.options->headless || !parsed.options->command.isEmpty();
        const bp::app::Command *command =
            parsed.options ? bp::app::findCommand(parsed.options->command) : nullptr;
        // --headless paints too: GET /v1/sessions/{id}/report?format=pdf.
        headless = parsed.options && parsed.options->headless && parsed.options->command.isEmpty();
        guiCommand = (command && command->needsGui) || headless;
    }
    // --headless: Qt's own UNIX event dispatcher instead of GLib's. The REST
    // thread's event loop is its hot path, and GLib's costs ~20% of the
    // throughput there (docs/benchmarks.md, REST). The console keeps GLib
    // (desktop integration).
    if (headless && !qEnvironmentVariableIsSet("QT_NO_GLIB"))
        qputenv("QT_NO_GLIB", "1");
    if (guiCommand && !qEnvironmentVariableIsSet("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen"); // paints into files only: never needs a display
    std::unique_ptr<QCoreApplication> app;
    if (!windowless)
        app = std::make_unique<QApplication>(argc, argv);
    else if (guiCommand)
        app = std::make_unique<QGuiApplication>(argc, argv);
    else
        app = std::make_unique<QCoreApplication>(argc, argv);
    setIdentity();
    auto parsed = bp::app::parseAppOptions(arguments);
    if (!parsed.exitText.isEmpty()) {
        QTextStream(stdout) << parsed.exitText;
        return 0;
    }
    if (!parsed.options)
        return fail(parsed.error);
    const bp::app::AppOptions &options = *parsed.options;

    if (!options.command.isEmpty()) {
        const bp::app::Command *command = bp::app::findCommand(options.command);
        if (!command)
            return fail(QStringLiteral("unknown command '%1' (see --help)").arg(options.command));
        return command->run(options);
    }

    auto host = bp::app::createEngine(options);
    if (!host.engine)
        return fail(host.error);
    // Both the console and --headless serve the REST endpoint.
    auto endpoint = bp::rest::startEndpoint(
        *host.engine, options, [&host] { return host.droppedRows(); }, host.store);
    if (options.headless) {
        if (!endpoint)
            return fail(QString::fromStdString(endpoint.status().message()));
        return bp::rest::runHeadless(*app, *host.engine, **endpoint);
    }
    if (!endpoint) {
        // A missing token off loopback is a configuration error; a busy port
        // only costs the console its endpoint.
        if (endpoint.status().code() == bp::StatusCode::InvalidArgument)
            return fail(QString::fromStdString(endpoint.status().message()));
        QTextStream(stderr) << "batchpilot: REST endpoint not started: "
                            << QString::fromStdString(endpoint.status().message()) << "\n";
    }

    bp::app::EngineBridge bridge(*host.engine);
    bp::ui::ConsoleContext console;
    console.bridge = &bridge;
    console.store = host.store;
    console.sessionId = host.sessionId();
    console.databasePath = host.store ? options.db : QString();
    console.loggingWarning = host.loggingWarning;
    console.droppedRows = [&host] { return host.droppedRows(); };
    console.restUrl = endpoint ? (*endpoint)->url() : QString();
    console.restProblem = endpoint ? QString() : QString::fromStdString(endpoint.status().message());
    // Replays build their own copy of the model, once, on first use.
    console.replayBackend = bp::ui::ReplayRunner::cached([options] { return bp::app::backendFor(options); });
    console.sampleTrace = bp::app::sampleTracePath(); // offered while the store holds no trace
    if (qEnvironmentVariableIsSet("BATCHPILOT_NVML_LIBRARY"))
        console.nvmlLibrary = qEnvironmentVariable("BATCHPILOT_NVML_LIBRARY");
    bp::ui::MainWindow window(console);
    window.show();
    if (const QString demo = qEnvironmentVariable(bp::ui::DemoScript::kEnvironmentVariable); !demo.isEmpty())
        (new bp::ui::DemoScript(window, demo))->start();
    const int rc = app->exec();
    if (endpoint)
        bp::rest::drainAndStop(*host.engine, **endpoint);
    else
        host.engine->shutdown(bp::ShutdownMode::Drain);
    return rc;
}
