// batchpilot: the console, --headless serving, and the window-less
// subcommands (see app/commands.cpp). The composition root: the only code
// above app/, ui/, app/rest and app/report, and the only one that includes
// ui/ headers (cmake/check_layering.cmake) -- in console.cpp, which a build
// without Qt Gui (BATCHPILOT_GUI=OFF) replaces by console_absent.cpp
// (entry/console.h). This file is the same in both builds.
#include "console.h"

#include "app/app_options.h"
#include "app/commands.h"
#include "app/engine_host.h"
#include "app/rest/serve.h"
#include "app/rest/signal_watcher.h"

#include <QCoreApplication>
#include <QTextStream>

#include <csignal>
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

// What a build without Qt Gui says instead of running `what`.
QString noGui(const QString &what)
{
    return QStringLiteral("this build has no Qt Gui (BATCHPILOT_GUI=OFF): %1; serve with --headless, or run "
                          "a subcommand that needs no window (see --help)")
        .arg(what);
}

} // namespace

int main(int argc, char **argv)
{
    QStringList arguments;
    for (int i = 0; i < argc; ++i)
        arguments << QString::fromLocal8Bit(argv[i]);
    bp::entry::AppKind kind = bp::entry::AppKind::Core;
    bool headless = false;
    {
        // Parse before any QApplication exists: subcommands and --headless
        // must run without a display.
        setIdentity();
        auto parsed = bp::app::parseAppOptions(arguments);
        const bool windowless =
            !parsed.options || parsed.options->headless || !parsed.options->command.isEmpty();
        const bp::app::Command *command =
            parsed.options ? bp::app::findCommand(parsed.options->command) : nullptr;
        // --headless paints too: GET /v1/sessions/{id}/report?format=pdf.
        headless = parsed.options && parsed.options->headless && parsed.options->command.isEmpty();
        if (!windowless)
            kind = bp::entry::AppKind::Window;
        else if ((command && (command->paints || command->needsGui)) || headless)
            kind = bp::entry::AppKind::Paints;
    }
    // --headless: Qt's own UNIX event dispatcher instead of GLib's. The REST
    // thread's event loop is its hot path, and GLib's costs ~20% of the
    // throughput there (docs/benchmarks.md, REST). The console keeps GLib
    // (desktop integration).
    if (headless && !qEnvironmentVariableIsSet("QT_NO_GLIB"))
        qputenv("QT_NO_GLIB", "1");
    if (kind == bp::entry::AppKind::Paints && !qEnvironmentVariableIsSet("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen"); // paints into files only: never needs a display
    std::unique_ptr<QCoreApplication> app = bp::entry::createApplication(kind, argc, argv);
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
        if (command->needsGui && !bp::entry::hasGui())
            return fail(noGui(QStringLiteral("'batchpilot %1' needs it").arg(command->name)));
        return command->run(options);
    }
    if (!options.headless && !bp::entry::hasGui())
        return fail(noGui(QStringLiteral("the console is not built")));

    auto host = bp::app::createEngine(options);
    if (!host.engine)
        return fail(host.error);
    // NVML for the endpoint's GPU gauges (/metrics, /v1/stats); absent
    // without a library or a GPU.
    auto gpu = bp::rest::openGpuSampler(host.engine->model());
    // Stderr: stdout carries only the listening line, which scripts read.
    for (const QString &note : bp::rest::startupNotes(*host.engine, gpu.get()))
        QTextStream(stderr) << "batchpilot: " << note << "\n";
    // --headless: SIGINT and SIGTERM are watched before the listening line
    // goes out (a script may signal as soon as it reads it).
    std::unique_ptr<bp::rest::SignalWatcher> stopSignals;
    if (options.headless)
        stopSignals = std::make_unique<bp::rest::SignalWatcher>(std::initializer_list<int>{SIGINT, SIGTERM});
    // Both the console and --headless serve the REST endpoint.
    auto endpoint = bp::rest::startEndpoint(
        *host.engine, options, [&host] { return host.droppedRows(); }, host.store, std::move(gpu));
    if (options.headless) {
        if (!endpoint)
            return fail(QString::fromStdString(endpoint.status().message()));
        return bp::rest::runHeadless(*app, *host.engine, **endpoint, *stopSignals);
    }
    QString restProblem;
    if (!endpoint) {
        // A missing token off loopback is a configuration error; a busy port
        // only costs the console its endpoint.
        if (endpoint.status().code() == bp::StatusCode::InvalidArgument)
            return fail(QString::fromStdString(endpoint.status().message()));
        restProblem = QString::fromStdString(endpoint.status().message());
        QTextStream(stderr) << "batchpilot: REST endpoint not started: " << restProblem << "\n";
    }
    return bp::entry::runConsole(*app, options, host, endpoint ? endpoint->get() : nullptr, restProblem);
}
