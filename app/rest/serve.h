// The endpoint as the console and --headless run it (entry/main.cpp).
#pragma once

#include "rest_server.h"

#include "app/app_options.h"

#include <QCoreApplication>

#include <functional>
#include <memory>

namespace bp::rest {

// Builds the RestOptions from the command line, starts the endpoint and
// prints exactly "listening on http://HOST:PORT" to stdout (flushed) once it
// accepts connections. `droppedTraceRows` feeds
// batchpilot_trace_dropped_rows_total when a trace sink exists.
// `store` (may be null) serves the session reports.
Result<std::unique_ptr<RestServer>> startEndpoint(Engine &engine, const app::AppOptions &options,
                                                 std::function<std::uint64_t()> droppedTraceRows = {},
                                                 std::shared_ptr<const TraceStore> store = {});

// --headless: serves until SIGINT or SIGTERM, then drainAndStop(). Returns
// the process exit code (0 after a graceful shutdown).
int runHeadless(QCoreApplication &app, Engine &engine, RestServer &server);

// New inference gets 503 while the engine finishes what is queued; then the
// endpoint writes the last answers and closes.
void drainAndStop(Engine &engine, RestServer &server);

} // namespace bp::rest
