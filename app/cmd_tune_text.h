// The text of `batchpilot tune` (cmd_tune.cpp, cmd_tune_remote.cpp): the
// table of candidates, the measured figures of a verification session,
// and the predicted-vs-measured table.
#pragma once

#include "tune_output.h"

#include "engine/sim/tune/tuner.h"
#include "engine/store/trace_store.h"

#include <QString>
#include <QTextStream>

namespace bp::app {

// The figures of a recorded session (a verification replay) against `slo`.
Result<TuneFigures> measuredFigures(const TraceStore &store, std::int64_t sessionId, std::size_t requests,
                                    const TuneSlo &slo);

} // namespace bp::app
