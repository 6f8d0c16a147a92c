#include "serve.h"

#include "signal_watcher.h"

#include <QTextStream>

#include <csignal>
#include <cstdio>

namespace bp::rest {

Result<std::unique_ptr<RestServer>> startEndpoint(Engine &engine, const app::AppOptions &options,
                                                 std::function<std::uint64_t()> droppedTraceRows,
                                                 std::shared_ptr<const TraceStore> store)
{
    RestOptions rest = restOptionsFrom(options);
    rest.droppedTraceRows = std::move(droppedTraceRows);
    rest.store = std::move(store);
    auto server = std::make_unique<RestServer>(engine, std::move(rest), QCoreApplication::applicationVersion());
    auto started = server->start();
    if (!started)
        return started.status();
    // Scripts wait for this exact line (tests parse the port from it).
    std::printf("listening on %s\n", qPrintable(server->url()));
    std::fflush(stdout);
    return server;
}

int runHeadless(QCoreApplication &app, Engine &engine, RestServer &server)
{
    SignalWatcher watcher({SIGINT, SIGTERM});
    if (!watcher.isValid())
        QTextStream(stderr) << "batchpilot: cannot watch SIGINT/SIGTERM; stop with SIGKILL\n";
    QObject::connect(&watcher, &SignalWatcher::received, &app, [&](int number) {
        QTextStream(stderr) << "batchpilot: " << (number == SIGINT ? "SIGINT" : "SIGTERM")
                            << ": draining (send it again to stop at once)\n";
        server.setDraining(true); // 503 from this moment, before the loop even returns
        app.quit();
    });
    app.exec();
    drainAndStop(engine, server);
    return 0;
}

void drainAndStop(Engine &engine, RestServer &server)
{
    server.setDraining(true);
    // Blocks this thread only; the endpoint's thread keeps answering.
    engine.shutdown(ShutdownMode::Drain);
    server.stop();
}

} // namespace bp::rest
