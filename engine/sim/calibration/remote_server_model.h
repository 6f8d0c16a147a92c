// The scheduler model a remote calibration's server runs:
// replay --simulate, tune, plan and the Advisor, given a calibration of a
// vLLM, TGI or SGLang server, simulate that server's scheduler with its
// settings, and say where each setting came from:
//
//  1. given: --server-config FILE, or what `tune --target` read from the
//     server just now;
//  2. what the calibration read from the server (its /metrics, /info, ...);
//  3. the probe's limits, and only where the probe saw one acting as a cap:
//     the most sequences running while requests waited (`running_is_cap`)
//     sets max_num_seqs (SGLang max_running_requests, TGI max_batch_size);
//     vLLM's iteration-token histogram bound below the longest prompt the
//     probe sent sets max_num_batched_tokens (SGLang chunked_prefill_size);
//  4. else the server's default.
//
// A BatchPilot server (or an unknown kind) keeps the knobs it published.
#pragma once

#include "engine/sim/calibration/remote_calibration.h"

#include "engine/core/batching_config.h"
#include "engine/core/result.h"

#include <string>
#include <vector>

namespace bp {

struct SettingOrigin {
    std::string name;   // the server's own name: "max_num_seqs"
    std::string value;  // "16"
    std::string origin; // "--server-config vllm.sh", "read: GET /metrics", "probe: ...", "default"
};

struct RemoteServerModel {
    BatchingConfig config;              // validated
    std::string server;                 // "vllm"
    std::vector<SettingOrigin> origins; // the scheduler's settings, in the server's names
    // "max_num_seqs=16 (probe: 16 ran while requests waited), max_num_batched_tokens=..."
    std::string describe() const;
};

// `given`: the settings that come first (nullptr: none). InvalidArgument when
// the merged settings do not make a valid config.
Result<RemoteServerModel> remoteServerModel(const RemoteCalibration &calibration,
                                            const ServerSettings *given);

// The prompt chunk a server model's step takes at most (vLLM with chunked
// prefill: max_num_batched_tokens; SGLang: chunked_prefill_size;
// llama-server: n_ubatch, a pass's tokens — its turn takes n_batch, but
// cost-wise each n_ubatch is a pass over the prompt's cached part); 0 = the
// whole prompt in one step.
int serverPrefillChunk(const BatchingConfig &config);

// True when a server model runs a prompt that joins running decodes as
// passes of its own beside (or between) theirs, so a probe's mixed row
// counts the prompt's own step (probeObservations' prefillAlone): TGI and
// SGLang prefill alone; llama-server with a KV cache per slot splits a
// turn into ubatches of consecutive slots with equal tokens each
// (LlamaCppScheduler::passes), the prompt's tokens past the first in a
// pass of their own.
bool serverPrefillAlone(const BatchingConfig &config);

// The multiple a server model pads a pass's KV view to (llama-server: 256,
// LlamaCppScheduler::kKvPad; 0: none): the probe's rows count the cells read.
int serverKvPad(const BatchingConfig &config);
// True for a server that saves its idle slots' KV into a RAM prompt cache
// when a request starts (llama-server: probeObservations' savesIdleSlots).
bool serverSavesIdleSlots(const BatchingConfig &config);

// True for a calibration whose server has a scheduler model (vLLM, TGI,
// SGLang, Triton, llama.cpp): what the simulation of it should run.
bool simulatesServerModel(const RemoteCalibration &calibration);

// A calibration of a server of unknown kind (nothing in its /metrics or
// routes said which it is, and no --server): no scheduler model of it
// exists here, so a simulation must not pick one silently. The
// message says so and what to do (`command`: "replay --simulate", "tune");
// nullopt when the kind is known.
std::optional<std::string> unknownKindMessage(const RemoteCalibration &calibration,
                                              const std::string &command);

} // namespace bp
