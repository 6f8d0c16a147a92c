#include "serve.h"

#include "signal_watcher.h"

#include "app/nvml_sampler.h"

#include <QLocale>
#include <QTextStream>

#include <csignal>
#include <cstdio>

namespace bp::rest {

std::shared_ptr<app::NvmlSampler> openGpuSampler(const ModelInfo &model)
{
    const std::string library = app::NvmlSampler::libraryFromEnvironment();
    if (library.empty())
        return nullptr;
    return std::make_shared<app::NvmlSampler>(library, app::NvmlSampler::deviceIndexFor(model.device));
}

QStringList startupNotes(const Engine &engine, const app::NvmlSampler *gpu)
{
    const ModelInfo &m = engine.model();
    QLocale c = QLocale::c(); // the same digit groups, whatever the machine's locale
    c.setNumberOptions(QLocale::DefaultNumberOptions);
    QStringList facts;
    if (!m.architecture.empty())
        facts << QString::fromStdString(m.architecture);
    facts << QString::fromStdString(m.dtype);
    if (m.parameters > 0)
        facts << QStringLiteral("%1 parameters").arg(c.toString(qlonglong(m.parameters)));
    if (m.kvBytesPerToken > 0)
        facts
            << QStringLiteral("%1 bytes of KV cache per token").arg(c.toString(qlonglong(m.kvBytesPerToken)));
    QStringList notes{QStringLiteral("model %1 on %2: %3")
                          .arg(QString::fromStdString(m.name), QString::fromStdString(m.device),
                               facts.join(QStringLiteral(", ")))};
    if (const std::shared_ptr<Backend> backend = engine.backend())
        for (const std::string &note : backend->notes())
            notes << QString::fromStdString(note);
    if (!gpu)
        notes << QStringLiteral("GPU gauges: off (BATCHPILOT_NVML_LIBRARY is empty)");
    else if (gpu->available())
        notes << QStringLiteral("GPU gauges: GPU %1 (%2), from NVML")
                     .arg(gpu->deviceIndex())
                     .arg(QString::fromStdString(gpu->deviceName()));
    else
        notes << QStringLiteral("GPU gauges: none (%1)").arg(QString::fromStdString(gpu->error()));
    return notes;
}

Result<std::unique_ptr<RestServer>> startEndpoint(Engine &engine, const app::AppOptions &options,
                                                  std::function<std::uint64_t()> droppedTraceRows,
                                                  std::shared_ptr<const TraceStore> store,
                                                  std::shared_ptr<app::NvmlSampler> gpu)
{
    RestOptions rest = restOptionsFrom(options);
    rest.droppedTraceRows = std::move(droppedTraceRows);
    rest.store = std::move(store);
    rest.gpu = std::move(gpu);
    auto server =
        std::make_unique<RestServer>(engine, std::move(rest), QCoreApplication::applicationVersion());
    auto started = server->start();
    if (!started)
        return started.status();
    // Scripts wait for this exact line (tests parse the port from it).
    std::printf("listening on %s\n", qPrintable(server->url()));
    std::fflush(stdout);
    return server;
}

int runHeadless(QCoreApplication &app, Engine &engine, RestServer &server, SignalWatcher &stopSignals)
{
    if (!stopSignals.isValid())
        QTextStream(stderr) << "batchpilot: cannot watch SIGINT/SIGTERM; stop with SIGKILL\n";
    QObject::connect(&stopSignals, &SignalWatcher::received, &app, [&](int number) {
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
