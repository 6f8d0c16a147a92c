// batchpilot: the console, --headless serving, and the window-less
// subcommands (see commands.cpp).
#include "app_options.h"
#include "commands.h"
#include "engine_bridge.h"
#include "engine_host.h"

#include "ui/main_window.h"

#include <QApplication>
#include <QCoreApplication>
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
    {
        // Parse before any QApplication exists: subcommands and --headless
        // must run without a display.
        setIdentity();
        auto parsed = bp::app::parseAppOptions(arguments);
        windowless = !parsed.options || parsed.options->headless || !parsed.options->command.isEmpty();
    }
    std::unique_ptr<QCoreApplication> app = windowless ? std::make_unique<QCoreApplication>(argc, argv)
                                                       : std::make_unique<QApplication>(argc, argv);
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
    if (options.headless)
        return fail(QStringLiteral("--headless needs the REST endpoint, which this build does not have yet"));

    bp::app::EngineBridge bridge(*host.engine);
    bp::ui::MainWindow window(bridge);
    window.show();
    const int rc = app->exec();
    host.engine->shutdown(bp::ShutdownMode::Drain);
    return rc;
}
