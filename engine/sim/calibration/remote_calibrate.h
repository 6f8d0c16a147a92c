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

// The probe's rows of a server whose model pads its KV view to `kvPad`
// cells (serverKvPad; llama-server: 256), priced on that view and on each
// item's own context, each fitted (fitRemote): the rows of the better fit
// (the lower median relative error over every row) are kept. Whether the
// attention reads the padded view is the server's kernel's, not its
// scheduler's: llama.cpp's CPU flash attention skips the masked cells, so
// there a decode at context 60 costs less than one at 250; a kernel that
// reads the whole view prices both alike. With kvPad 0 (no padding), or
// when one way cannot be fitted, the other is kept.
struct KvViewChoice {
    std::vector<ProbeObservation> rows;
    bool padded = false;
    // Each fit's median relative error over every row (nullopt: no fit).
    std::optional<double> paddedError, contextError;
};
KvViewChoice chooseKvView(const std::vector<ProbeRequest> &requests, int chunk, bool streaming,
                          bool prefillAlone, int kvPad, bool savesIdleSlots);
// "attention priced on each item's own context, not the KV view padded to
// 256 cells: the probe's rows fit it better (median error 6.1 % against
// 9.8 %)"; empty when there was no choice (kvPad 0).
std::string describe(const KvViewChoice &choice, int kvPad);

// Fits `remote.observations` (fitRemote) and fills the calibration:
// cost = remoteCostModel, the terms with their standard errors, the error
// per phase, `requestOverheadS` = the per-request term; the model's facts
// from `vocabSize` and the server's max_model_len (else `maxModelLen`).
// The fit's error is the status when there are too few usable rows.
Result<Calibration> remoteCalibration(const std::string &model, int vocabSize, std::int64_t maxModelLen,
                                      RemoteCalibration remote, const std::string &source);

// `calibrate --target URL --refresh ID`: how the server's pace now compares
// with the pace calibration `remote` priced (its PaceReference): the median,
// over the refresh's single-stream decodes (ProbePlan::refresh, sent with
// the reference's prompt and output, so like with like), of the median gap
// between a stream's tokens, over the reference's. nullopt when the
// calibration stored no reference (a protocol without token events, or
// calibrated before there was one) or no decode answered.
struct PaceRatio {
    double ratio = 1;
    std::size_t requests = 0; // the refresh's decodes it is read from
    double stepNowS = 0;      // their median step
    double stepThenS = 0;     // the reference's
    double spread = 0;        // (max - min) / median of the refresh's steps
    int thenRequests = 1;     // the reference's requests
    double thenSpread = 0;    // and their spread
};
std::optional<PaceRatio> paceAgainst(const RemoteCalibration &remote,
                                     const std::vector<ProbeRequest> &refresh);
// Every stored row's seconds and steps, and the reference, times `ratio`:
// fitted again (remoteCalibration), every term and the request overhead
// scale by it.
void scalePace(RemoteCalibration &remote, double ratio);
// "refresh: a single stream's step 13.10 ms now (3 requests, 4 % apart),
// 11.52 ms when calibration 4 was measured (2 requests, 9 % apart): x1.137".
std::string describe(const PaceRatio &pace, std::int64_t calibrationId);

} // namespace bp
