// What the console needs from the composition root (entry/main.cpp): the
// engine's bridge and, when present, the trace store and the live session,
// the REST endpoint's URL, and a way to get a model for replays.
#pragma once

#include "replay_runner.h"

#include "app/engine_bridge.h"

#include <QString>

#include <functional>
#include <memory>

namespace bp::ui {

struct ConsoleContext {
    app::EngineBridge *bridge = nullptr; // required; outlives the window
    std::shared_ptr<TraceStore> store;   // null: no recording, import or replay
    std::int64_t sessionId = 0;          // the live session being recorded (0 = none)
    QString databasePath;
    QString restUrl;                            // empty when the endpoint is not running
    QString restProblem;                        // why not, when it is not
    QString loggingWarning;                     // recording problems at start-up
    std::function<std::uint64_t()> droppedRows; // trace rows the logger dropped so far (may be empty)
    ReplayRunner::BackendFactory replayBackend; // may be empty: replay is then refused with a reason
    QString sampleTrace;                        // offered on first run (app::sampleTracePath()); empty: none
    // NVML library for GPU utilization; empty = do not try.
    QString nvmlLibrary = QStringLiteral("libnvidia-ml.so.1");
};

} // namespace bp::ui
