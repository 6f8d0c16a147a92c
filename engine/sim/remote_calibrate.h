// From a remote probe's (or a recorded remote session's) rows to a stored
// calibration (`batchpilot calibrate --target`, docs/remote.md): the fit,
// its terms and errors, and the model facts a simulation of that server
// needs, keyed by the target's URL, the model's name there and the
// server's kind.
#pragma once

#include "calibration.h"
#include "remote_calibration.h"

#include "engine/core/result.h"

#include <string>

namespace bp {

// The prompt chunk per step the server's settings imply: under policy
// continuous with chunked prefill, the smaller of prefill_chunk and the
// step's token budget; else 0 (a prompt runs whole in one step).
int prefillChunkOf(const ServerSettings &settings);

// Fits `remote.observations` (fitRemote) and fills the calibration:
// cost = remoteCostModel, the terms with their standard errors, the error
// per phase, `requestOverheadS` = the per-request term; the model's facts
// from `vocabSize` and the server's max_model_len (else `maxModelLen`).
// The fit's error is the status when there are too few usable rows.
Result<Calibration> remoteCalibration(const std::string &model, int vocabSize, std::int64_t maxModelLen,
                                      RemoteCalibration remote, const std::string &source);

} // namespace bp
