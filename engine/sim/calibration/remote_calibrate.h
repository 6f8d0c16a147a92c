// From a remote probe's (or a recorded remote session's) rows to a stored
// calibration (`batchpilot calibrate --target`, docs/remote.md): the fit,
// its terms and errors, and the model facts a simulation of that server
// needs, keyed by the target's URL, the model's name there and the
// server's kind.
#pragma once

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/calibration/remote_calibration.h"

#include "engine/core/result.h"

#include <optional>
#include <string>

namespace bp {

// The prompt chunk per step the server's settings imply: under policy
// continuous with chunked prefill, the smaller of prefill_chunk and the
// step's token budget; else 0 (a prompt runs whole in one step).
int prefillChunkOf(const ServerSettings &settings);

// The running cap the probe's scrapes showed so far: the most sequences
// running while requests waited (ObservedLimits::runningIsCap); nullopt
// when the scrapes showed none.
std::optional<int> runningCapOf(const ObservedLimits &limits);

// A mixed round fitted to a server that runs at most `cap` sequences. Its
// prompts are meant to run beside its streams: with `cap` streams or more
// running, each prompt waits for streams to end, and the rest of the round
// is never sent. So the round gets at most cap − 1 streams; with a cap of 1
// no prompt can run beside a stream, and the round is dropped (no streams,
// no prompts). Returns what changed and why, for the probe's progress line;
// empty when the round already fits (or is not a mixed round).
std::string leaveRoomForProbes(ProbeRound &round, int cap);

// Fits `remote.observations` (fitRemote) and fills the calibration:
// cost = remoteCostModel, the terms with their standard errors, the error
// per phase, `requestOverheadS` = the per-request term; the model's facts
// from `vocabSize` and the server's max_model_len (else `maxModelLen`).
// The fit's error is the status when there are too few usable rows.
Result<Calibration> remoteCalibration(const std::string &model, int vocabSize, std::int64_t maxModelLen,
                                      RemoteCalibration remote, const std::string &source);

// `calibrate --target URL --refresh ID`: how the server's pace now compares
// with the pace calibration `remote` priced. `rows`: a refresh probe's
// (ProbePlan::refresh: single-stream decodes). Both sides are single-stream
// decode rows (no request term, one item a step), each read as measured
// over what the calibration's terms predict, so a context that differs
// from the probe's is priced, not counted as drift:
//     ratio = median(now) / median(the calibration's own such rows)
// (1 for the calibration's side when it has none). nullopt without a usable
// row now.
struct PaceRatio {
    double ratio = 1;
    std::size_t rows = 0;     // the refresh's rows it is read from
    double stepNowS = 0;      // their median measured step
    double stepPricedS = 0;   // what the calibration prices those steps at
    double calibratedFit = 1; // the calibration's own single-stream rows: median measured / predicted
};
std::optional<PaceRatio> paceAgainst(const RemoteCalibration &remote,
                                     const std::vector<ProbeObservation> &rows);
// Every stored row's seconds and steps times `ratio`: fitted again
// (remoteCalibration), every term and the request overhead scale by it.
void scalePace(RemoteCalibration &remote, double ratio);
// "refresh: a single stream's step 13.10 ms now, 11.52 ms as calibration 4
// priced it (x1.14, from 12 decode blocks)".
std::string describe(const PaceRatio &pace, std::int64_t calibrationId);

} // namespace bp
