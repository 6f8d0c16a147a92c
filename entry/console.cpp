// entry/console.h in a build with Qt Gui (BATCHPILOT_GUI=ON): the console.
#include "console.h"

#include "app/engine_bridge.h"
#include "app/data_paths.h"
#include "app/nvml_sampler.h"
#include "app/rest/serve.h"

#include "ui/demo_script.h"
#include "ui/main_window.h"

#include <QApplication>
#include <QGuiApplication>

namespace bp::entry {

bool hasGui()
{
    return true;
}

std::unique_ptr<QCoreApplication> createApplication(AppKind kind, int &argc, char **argv)
{
    switch (kind) {
    case AppKind::Window: return std::make_unique<QApplication>(argc, argv);
    case AppKind::Paints: return std::make_unique<QGuiApplication>(argc, argv);
    case AppKind::Core: break;
    }
    return std::make_unique<QCoreApplication>(argc, argv);
}

int runConsole(QCoreApplication &app, const app::AppOptions &options, app::EngineHostResult &host,
               rest::RestServer *endpoint, const QString &restProblem)
{
    app::EngineBridge bridge(*host.engine);
    ui::ConsoleContext console;
    console.bridge = &bridge;
    console.store = host.store;
    console.sessionId = host.sessionId();
    console.databasePath = host.store ? options.db : QString();
    console.loggingWarning = host.loggingWarning;
    console.droppedRows = [&host] { return host.droppedRows(); };
    console.restUrl = endpoint ? endpoint->url() : QString();
    console.restProblem = restProblem;
    // Replays build their own copy of the model, once, on first use.
    console.replayBackend = ui::ReplayRunner::cached([options] { return app::backendFor(options); });
    console.sampleTrace = app::sampleTracePath(); // offered while the store holds no trace
    console.nvmlLibrary = QString::fromStdString(app::NvmlSampler::libraryFromEnvironment());
    ui::MainWindow window(console);
    window.show();
    if (const QString demo = qEnvironmentVariable(ui::DemoScript::kEnvironmentVariable); !demo.isEmpty())
        (new ui::DemoScript(window, demo))->start();
    const int rc = app.exec();
    if (endpoint)
        rest::drainAndStop(*host.engine, *endpoint);
    else
        host.engine->shutdown(ShutdownMode::Drain);
    return rc;
}

} // namespace bp::entry
