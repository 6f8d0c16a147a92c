// Shared by the GUI tests: a real engine on builtin:echo (no compute, so the
// suite stays fast) and a temporary trace store.
#pragma once

#include "engine/exec/engine.h"
#include "engine/store/trace_store.h"

#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

namespace bp::test {

inline std::unique_ptr<Engine> makeEchoEngine(BatchingConfig config = {})
{
    EngineOptions options;
    options.backend = makeEchoBackend(256, 2048);
    options.batching = std::move(config);
    auto engine = Engine::create(std::move(options));
    if (!engine)
        qFatal("cannot create the engine: %s", engine.status().message().c_str());
    return std::move(engine.value());
}

// Keeps QSettings and other per-user state of the tests away from the
// user's own (call in initTestCase).
inline void isolateSettings()
{
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName(QStringLiteral("BatchPilotTests"));
    QCoreApplication::setApplicationName(QStringLiteral("batchpilot-tests"));
}

struct TempStore {
    QTemporaryDir dir;
    std::shared_ptr<TraceStore> store =
        TraceStore::open(dir.filePath(QStringLiteral("t.sqlite")).toStdString()).value();

    // A small plain-CSV trace file: `n` requests `gapS` apart.
    QString writeCsv(int n, double gapS, const QString &name = QStringLiteral("small.csv")) const
    {
        const QString path = dir.filePath(name);
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Text))
            qFatal("cannot write %s", qPrintable(path));
        QTextStream out(&f);
        out << "arrival_s,input_tokens,output_tokens\n";
        for (int i = 0; i < n; ++i)
            out << QString::number(i * gapS, 'f', 6) << "," << (8 + (i * 7) % 120) << "," << (i % 5) << "\n";
        return path;
    }
};

} // namespace bp::test
