// The endpoint as the console and --headless run it (entry/main.cpp).
#pragma once

#include "rest_server.h"

#include "app/app_options.h"

#include <QCoreApplication>
#include <QStringList>

#include <functional>
#include <memory>

namespace bp::app {
class NvmlSampler;
}

namespace bp::rest {

class SignalWatcher;

// NVML for the endpoint's GPU gauges: the library NvmlSampler::
// libraryFromEnvironment() names ($BATCHPILOT_NVML_LIBRARY, else the
// driver's), the device `model` runs on (GPU 0 for a CPU model). Null when
// $BATCHPILOT_NVML_LIBRARY is set but empty; otherwise a sampler that may
// be unavailable (no library, no GPU: error() says why).
std::shared_ptr<app::NvmlSampler> openGpuSampler(const ModelInfo &model);

// What the server says at start, before the listening line: the model
// ("model builtin:tiny-decoder on cuda:0: bfloat16, 3,487,232 parameters,
// 16,384 bytes of KV cache per token"), its notes (Backend::notes(): the KV
// cache, CUDA graphs) and where the GPU gauges come from. One line each,
// without a "batchpilot: " prefix.
QStringList startupNotes(const Engine &engine, const app::NvmlSampler *gpu);

// Builds the RestOptions from the command line, starts the endpoint and
// prints exactly "listening on http://HOST:PORT" to stdout (flushed) once it
// accepts connections. `droppedTraceRows` feeds
// batchpilot_trace_dropped_rows_total when a trace sink exists.
// `store` (may be null) serves the session reports; `gpu` (may be null) the
// GPU gauges (RestOptions::gpu).
Result<std::unique_ptr<RestServer>> startEndpoint(Engine &engine, const app::AppOptions &options,
                                                  std::function<std::uint64_t()> droppedTraceRows = {},
                                                  std::shared_ptr<const TraceStore> store = {},
                                                  std::shared_ptr<app::NvmlSampler> gpu = {});

// --headless: serves until SIGINT or SIGTERM, then drainAndStop(). Returns
// the process exit code (0 after a graceful shutdown). `stopSignals` watches
// SIGINT and SIGTERM; made before startEndpoint() prints the listening line,
// so that a signal a script sends as soon as it reads that line drains the
// server too (made after it, a SIGTERM that came first killed the process
// outright, exit status 15, on a busy machine).
int runHeadless(QCoreApplication &app, Engine &engine, RestServer &server, SignalWatcher &stopSignals);

// New inference gets 503 while the engine finishes what is queued; then the
// endpoint writes the last answers and closes.
void drainAndStop(Engine &engine, RestServer &server);

} // namespace bp::rest
