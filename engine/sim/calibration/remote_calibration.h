// Calibrating a remote server from the outside (`batchpilot calibrate
// --target URL`): a bounded probe plan, what its answers say about
// the server's step cost, the limits its /metrics shows, and the fit.
//
// The model is the simulator's iteration cost (cost_model.h),
//     iter(n, T, A, D) = s0 + s1·n + s2·T + s3·A + s7·D
// (one engine step over n sequences fed T tokens, A = Σ tᵢ·(kᵢ + tᵢ), D the
// part of A that decodes read: a decode reads its whole KV cache for one
// token, a prompt chunk once for many, so a token of context costs a decode
// more — on llama-server's CPU step ~25x), plus
// one term the client sees and the engine's step does not:
//     o  per request: the HTTP path, tokenisation, the network, the first
//        token's delivery (TTFT's intercept beyond the prefill's steps).
// Every probe row is a sum of steps, so it is linear in (o, s0..s3):
//   prefill   TTFT at concurrency 1 = o + Σ over the prompt's chunks of iter(1, c, c·(k + c))
//   decode    a block of B steps read off one stream's token events while n
//             streams decode = Σ over the block's token events of every
//             stream (each a decode item at its context) + B·s0; at most
//             4 blocks a round (B >= 8), so that token events a server
//             writes in bursts blur a small part of each row
//   mixed     a prompt sent while n streams decode: the decode streams'
//             steps from the last token before it was sent to the first
//             after its first token = those steps' decodes + its chunks
// Rows are weighted by 1/seconds (relative error) and fitted non-negative
// (least_squares.h), each term with its standard error. The decode steps'
// serving path (token callbacks, the next decision) is inside s0, so the
// calibration's step overhead is 0.
//
// A recorded remote session refines it (sessionObservations): each
// request's decode window (TTFT to its end: outputTokens − 1 steps) with the
// decodes and prefills of the requests that overlapped it.
#pragma once

#include "engine/sim/calibration/cost_model.h"
#include "engine/sim/calibration/remote_settings.h"

#include "engine/core/clock.h"
#include "engine/store/store_types.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bp {

struct PaceReference;

// One round of the plan: requests sent together.
struct ProbeRound {
    std::string phase;       // "prefill", "decode", "mixed"
    int concurrency = 1;     // requests at once (mixed: the decode streams)
    int promptTokens = 0;    // each request's prompt (mixed: the streams')
    int maxTokens = 1;       // each request's output
    std::vector<int> probes; // mixed: prompt lengths sent one after another (max_tokens 1)
    // Where the server's slots are pinned (ProbeRunOptions::pinSlots): the
    // streams take slots 0, stride, 2·stride, ... (2: no two adjacent).
    int slotStride = 1;
};

struct ProbePlan {
    int warmup = 1; // rounds of one short request first, not fitted (a fresh connection, a cold server)
    std::vector<int> prefillLengths{16, 64, 128, 256, 512, 1024, 2048};
    int prefillRepeats = 3;
    std::vector<int> decodeConcurrency{1, 2, 4, 8, 16, 32};
    int decodePrompt = 64;
    int decodeTokens = 128;
    std::vector<int> longDecodeConcurrency{1, 8}; // at a long context (half the model length, <= 1024)
    int mixedStreams = 16;
    int mixedTokens = 256;
    std::vector<int> mixedLengths{128, 512, 1024, 128, 512, 1024};
    bool pace = true; // the first single-stream decode again at the end (paceChange)
    // A llama-server whose slots are pinned: one more decode round of this
    // many streams in every other slot (0, 2, 4, ...). Its decodes of
    // non-adjacent slots run as one forward pass each a turn (split_equal),
    // where the other rounds' adjacent slots share one: the cost of a pass
    // itself, which the fit's per-step term otherwise reads only as an
    // intercept (and a replay's scattered slots pay many times a turn).
    // 0: none (withSpreadRound).
    int spreadStreams = 0;
    Duration timeout = std::chrono::seconds(60);      // per request, from when it is written
    Duration maxDuration = std::chrono::seconds(600); // the whole probe; then it stops and fits
    bool streaming = true;           // false (OIP): no token events, concurrency 1 only, no mixed phase
    std::int64_t maxModelLen = 4096; // prompt + output the server takes (fittedTo)

    static ProbePlan full(int maxConcurrency, bool streaming);
    static ProbePlan quick(int maxConcurrency, bool streaming);
    // `calibrate --refresh`: the warmup, then the calibration's reference
    // single-stream decode three times, one after another (paceAgainst).
    static ProbePlan refresh(const PaceReference &reference);
    // With the spread decode round for a llama-server of `slots` pinned
    // slots (at least 3): min(the widest decode round, ceil(slots / 2))
    // streams, when that is at least 2; unchanged otherwise.
    ProbePlan withSpreadRound(int slots) const;
    // Lengths clamped to a model of `maxModelLen` tokens (prompt + output);
    // what does not fit is dropped.
    ProbePlan fittedTo(std::int64_t maxModelLen) const;
    std::vector<ProbeRound> rounds() const;
    std::size_t requests() const;
    // The longest it can take: each round within one timeout (a mixed round
    // two: its streams, then the probe in flight), at most maxDuration.
    Duration bound() const;
    std::string describe() const; // one line per phase
};

// What one request measured, client side, in seconds from the probe's start.
struct ProbeRequest {
    std::string phase;
    int round = 0;
    bool stream = false; // mixed: a decode stream (else the probe)
    int concurrency = 1;
    int promptTokens = 0;
    int maxTokens = 0;
    int slot = -1; // the slot it asked for (id_slot); -1: the server's choice
    double sentS = 0;
    std::optional<double> firstTokenS;
    // Every streamed token's time: one per token once the answer is in
    // (perTokenTimes); while it streams, one per token event.
    std::vector<double> tokenTimesS;
    double endS = 0;
    int outputTokens = 0;
    bool ok = false;
    std::string error;
};

// One row of the remote fit: counts of (requests, steps, items, tokens,
// attention, the decodes' context) and the seconds they took.
struct ProbeObservation {
    static constexpr int kTerms = 7;
    std::string phase;
    std::array<double, kTerms> terms{};
    double seconds = 0;
    // A decode block's steps one by one (the gaps of the stream it is read
    // off, summing to `seconds`); empty for the other rows. The spread of
    // single steps is what a short request's TPOT meets: a block's sum
    // averages a stall away (fitRemote's residuals).
    std::vector<double> steps;
};

// A stream's tokens' times from its token events' times. A server may
// send several tokens in one event: llama-server holds a token that ends
// inside a UTF-8 character until the one that completes it (a byte-level
// vocabulary's random text: one event in ~7 holds two tokens), and a server
// may write every few steps. Counted as one token an event, such a stream's
// steps read ~15 % slow. `counts` (the tokens generated up to each event,
// as llama-server's timings.predicted_n; empty: unknown) places them
// exactly; else, when the answer's `total` tokens are more than the events,
// a gap holds round(gap / median gap) tokens (at least one), adjusted to
// the total where the per-token gap comes closest to the median. An event's
// tokens but its last are spread evenly over its gap (a first event's, one
// median gap apart before it). Otherwise the events are the tokens, and so
// where counts or the total say more than 64 tokens an event (a server's
// wrong count, not its chunking).
std::vector<double> perTokenTimes(const std::vector<double> &events, const std::vector<int> &counts,
                                  int total);

// The KV cells a token at `context` attends to on a server that pads its KV
// view to multiples of `kvPad` (llama-server: 256; 0: none, the context).
double kvCellsOf(std::int64_t context, int kvPad);
// The server's prompt chunk per step (0 = a whole prompt in one step).
std::array<double, ProbeObservation::kTerms> prefillTerms(int promptTokens, int chunk, int kvPad = 0);
// Rows from the probe's requests (decode blocks of `block` steps).
// `prefillAlone`: the server runs a prompt's prefill as steps of its own,
// the decodes waiting (TGI, SGLang; prefillAlone(); llama-server with a
// KV cache per slot: serverPrefillAlone()), so a mixed row's
// prompt adds its own steps; else (vLLM, BatchPilot) its chunks ride in
// the decode streams' steps.
// `kvPad`: the attention terms count the KV cells a server that pads its
// view reads (kvCellsOf; serverKvPad()).
// `savesIdleSlots`: the server copies the KV of the requests that finished
// since the last start into its prompt cache when a request starts
// (llama-server; serverSavesIdleSlots()): the rows that hold a probe's start
// count those cells (the s8 term), as the server model charges them
// (StepItem::copiedCells).
std::vector<ProbeObservation> probeObservations(const std::vector<ProbeRequest> &requests, int chunk,
                                                bool streaming, int block = 8, bool prefillAlone = false,
                                                int kvPad = 0, bool savesIdleSlots = false);
// The KV cells such a server copies as each request starts: per request
// of `requests` (by index; 0 for one that failed), the context of every
// request that ended before it was sent and after the start before it.
std::vector<double> savedAtStart(const std::vector<ProbeRequest> &requests);
// True for the servers whose prefill runs alone: "tgi", "sglang".
bool prefillAlone(const std::string &server);
// How far the server's pace moved while a probe ran: the median gap
// between tokens of the plan's last round ("pace", one stream) over that of
// its first single-stream decode request, in seconds each. Empty when
// either is missing, failed or has fewer than 8 tokens.
struct PaceChange {
    double firstStepS = 0;
    double lastStepS = 0;
    double change() const { return firstStepS > 0 ? lastStepS / firstStepS - 1 : 0; }
};
std::optional<PaceChange> paceChange(const std::vector<ProbeRequest> &requests);
// "pace: a single stream's step 12.38 ms in the first decode round, 10.91 ms
// in the last (-12 %)": what calibrate prints and stores with the plan.
std::string describe(const PaceChange &pace);
// The median gap between a streamed request's tokens; nullopt when it
// failed or has fewer than 8 tokens.
std::optional<double> medianTokenGap(const ProbeRequest &r);
// The pace a calibration priced, for `calibrate --refresh` to compare with:
// one stream's step on the probe's first single-stream decode (prompt and
// output as sent), the mean of it and the pace round's when both answered.
struct PaceReference {
    int promptTokens = 0, maxTokens = 0;
    double stepS = 0;
    int requests = 1;  // the first single-stream decode, and the pace round's when it answered
    double spread = 0; // how far the two requests' steps were apart, over their mean
    bool operator==(const PaceReference &) const = default;
};
std::optional<PaceReference> paceReference(const std::vector<ProbeRequest> &requests);
// Rows from a recorded remote session's requests (times from its start).
// `kvPad` as probeObservations'.
std::vector<ProbeObservation> sessionObservations(const std::vector<StoredRequest> &requests, int chunk,
                                                  int kvPad = 0);

// A scrape during the probe, with what the client had in flight then.
struct ProbeScrape {
    double atS = 0;
    TargetSample sample;
    double tokensInFlight = 0; // Σ prompt + tokens so far of requests past their first token
};

struct ObservedLimits {
    std::optional<double> maxRunning;         // most sequences running at a scrape
    bool runningIsCap = false;                // requests waited while that many ran
    std::optional<double> maxTokensPerStep;   // largest mean tokens per step between two scrapes
    std::optional<double> tokensPerStepBound; // vLLM's iteration-token histogram: no step had more
    std::optional<double> kvCapacityTokens;   // median of tokens in flight / KV usage
    // The longest prompt the probe sent and got an answer to: a step bound
    // below it was a cap (the server split that prompt).
    std::optional<double> longestPrompt;
    std::size_t kvSamples = 0;
    std::size_t scrapes = 0, scrapeErrors = 0;
    bool operator==(const ObservedLimits &) const = default;
};
// `first` and `last`: the probe's first and last scrapes, for histograms.
ObservedLimits observedLimits(const std::vector<ProbeScrape> &scrapes, const prom::Exposition *first,
                              const prom::Exposition *last);

struct TermFit {
    std::string name; // "request", "step", "per_sequence", "per_token", "per_attention", "per_decode_context"
    std::string meaning;
    double value = 0; // seconds per unit
    double stdError = std::numeric_limits<double>::quiet_NaN();
    bool atBound = false;
    double relError() const { return value > 0 && std::isfinite(stdError) ? stdError / value : stdError; }
};

struct RemoteFit {
    std::vector<TermFit> terms;             // request, then s0..s3, s7
    FitError error;                         // every row
    std::map<std::string, FitError> phases; // per phase
    // Measured / predicted per step (sampleShareMeans): every step of the
    // step rows counts once. A decode block gives each of its steps its own
    // ratio (the step's gap over the block's predicted mean step), unless
    // its stream's events come in bursts (a server that writes several
    // steps at once); a mixed row gives its ratio to each of its steps.
    // Scaled to a mean of 1: the fit prices the mean, they the spread.
    std::vector<double> residuals;
    // Rows left out of the fit and the residuals: far out of the others
    // (Tukey's far-out fences on measured / predicted, at least 2x from the
    // median), a stall met once.
    // They count in `error` and `phases`.
    std::size_t setAside = 0;
};
Result<RemoteFit> fitRemote(const std::vector<ProbeObservation> &rows);
double predictRemote(const RemoteFit &fit, const ProbeObservation &row);

struct ProbeStats {
    std::size_t requests = 0, failed = 0;
    double seconds = 0;
    bool interrupted = false; // Ctrl+C or the duration bound
    std::string plan;         // ProbePlan::describe()
    bool operator==(const ProbeStats &) const = default;
};

// What a calibration of a remote server adds to Calibration.
struct RemoteCalibration {
    std::string url, server, protocol; // the key beside the model
    ServerSettings settings;
    ObservedLimits limits;
    ProbeStats probe;
    int prefillChunk = 0;
    double requestOverheadS = 0;
    std::vector<TermFit> terms;
    std::map<std::string, FitError> phases;
    std::vector<ProbeObservation> observations; // the probe's rows (and a session's), for refits
    std::optional<PaceReference> pace;          // a streamed probe's single-stream pace (--refresh)
    // The rows price attention on the server's padded KV view (kvCellsOf
    // with serverKvPad) rather than on each item's context: whichever fits
    // the probe better (chooseKvView); the simulation prices it the same way
    // (CostModel::attentionOnKvView). Only a server model that pads reads it.
    bool paddedKvView = true;
};

// The iteration terms (and the pass/step terms they imply) of `fit`.
CostModel remoteCostModel(const RemoteFit &fit);

nlohmann::json toJson(const RemoteCalibration &r);
Result<RemoteCalibration> remoteCalibrationFromJson(const nlohmann::json &j);

} // namespace bp
