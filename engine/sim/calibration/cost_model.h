// A cost model: how long Backend::run takes for a batch, as a function of
// its shape, fitted from measurements. The simulator
// (simulator.h) charges every batch its prediction instead of running it.
//
// The model (times in seconds, b = batch size, L = padded length):
//
//   request level (one forward pass over the padded batch; also the
//   prefill of a generative model):
//       pass(b, L)  = p0 + p1·b + p2·b·L + p3·b·L²
//   generative, one decode step over b running rows whose context is c
//   tokens (the KV cache read grows with it):
//       step(b, c)  = d0 + d1·b + d2·b·c
//   one batch of a generative model, as builtin:tiny-decoder runs it: the
//   prefill, then decode steps k = 1 .. max(want) − 1, each over the rows
//   that still want a token (finished rows are compacted away) at context
//   L + k:
//       run = pass(b, L) + Σ_k step(b_k, L + k)
//   one iteration of step-level generation (policy `continuous`,
//   StepModel::step over a packed set of sequences: n items, T tokens fed —
//   prompt chunks and one per decode — and A = Σ_i t_i·(k_i + t_i), each
//   fed token attending to the context before it, k_i tokens cached):
//       iter = s0 + s1·n + s2·T + s3·A + s4·max(0, T − K) + s5·E + s6·X + s7·D + s8·C
//   On a GPU a step costs about the same whatever its size until the
//   device is busy (the knee K, in tokens), then grows with its tokens:
//   s2 is the slope below the knee (small on a GPU), s2 + s4 above it. E is
//   1 for a step with prompt tokens: on CUDA only a pure decode step replays
//   a CUDA graph, a step with a prefill chunk runs eagerly (launch-bound).
//   The fit chooses K among the observed token counts (none: no knee)
//   for the least error; on a CPU it usually finds none.
//   X is a mixture-of-experts model's active experts: the distinct experts
//   a step's T tokens are routed to in one MoE layer, which the weights a
//   step reads grow with (one token reads k experts, a large batch all E).
//   The profile measures it (Backend::expertsTouched) and fits s6 to the
//   measured counts; a prediction takes the count uniform routing gives,
//   E·(1 − (1 − k/E)^T) (expectedActiveExperts). 0 for a dense model.
//   D is the decodes' context (Σ over the step's decode items of the
//   context each attends to, a part of A): a decode reads its whole KV
//   cache for one token, where a prompt chunk reads it once for many, so
//   on a CPU server a decode's attention costs tens of times more per
//   token of context (llama-server here: ~6.5 µs against ~0.25 µs). The
//   remote fit (remote_calibration.h) fits s7; the local fit leaves it 0
//   (its s3 is measured on the decoder's own steps).
//   C is the KV cells a server copies out of its cache in the iteration
//   (StepShape::copiedCells: llama-server saves its idle slots into its RAM
//   prompt cache when a task starts). The remote fit fits s8 from the
//   probe's rows that hold such a start; the local fit leaves it 0.
//   A calibration without iteration measurements (made before they
//   existed) predicts an iteration from pass() and step() instead
//   (iterationSeconds()).
//
// Every term is linear in the coefficients, so one weighted least-squares
// fit takes any mix of observations — profile cells (whole batch, prefill
// alone, one mean decode step) and recorded batch rows — and minimises the
// *relative* error (each row is weighted by 1/measured). Coefficients are
// kept non-negative (a negative one is dropped and the rest refitted), so a
// prediction never goes below zero and never falls as a batch grows.
//
// `overhead` is what the serving path adds per batch outside Backend::run
// (hand-off, records, completions), measured from recorded sessions; the
// profile cannot see it. `stepOverhead` is the same for one step of policy
// `continuous` (the gap between a step's end and the dispatch of the next
// while sequences run), measured from a session's step rows; a step's
// serving path (token callbacks, the scheduler's next decision) is not a
// batch's.
#pragma once

#include "engine/core/clock.h"
#include "engine/core/result.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace bp {

// What one StepModel::step is given (policy `continuous`): its decodes and
// prompt chunks, with the context they attend to.
struct StepShape {
    int decodes = 0;                   // sequences fed their last token
    std::int64_t decodeContext = 0;    // Σ context of the decodes (cached + 1)
    int prefills = 0;                  // sequences fed a prompt chunk
    std::int64_t prefillTokens = 0;    // Σ chunk tokens
    std::int64_t prefillAttention = 0; // Σ chunk·(cached + chunk)
    // KV cells copied out of the cache in this iteration (StepItem::
    // copiedCells; the s8 term).
    std::int64_t copiedCells = 0;
    int items() const { return decodes + prefills; }
    std::int64_t tokens() const { return decodes + prefillTokens; }
    std::int64_t attention() const { return decodeContext + prefillAttention; }
    // Adds one item: `fed` tokens on top of `cached` ones, each attending
    // to `attendsTo` KV cells (< 0: cached + fed; a server that pads its KV
    // view, llama-server, attends to more).
    void add(std::int64_t cached, std::int64_t fed, std::int64_t attendsTo = -1);
};

struct CostModel {
    static constexpr int kPassTerms = 4;
    static constexpr int kStepTerms = 3;
    static constexpr int kIterationTerms = 9;
    static constexpr int kIterationStart = kPassTerms + kStepTerms;
    static constexpr int kTerms = kPassTerms + kStepTerms + kIterationTerms;
    // [p0, p1, p2, p3, d0, d1, d2, s0, s1, s2, s3, s4, s5, s6, s7, s8], seconds per unit of each term.
    std::array<double, kTerms> coef{};
    // The iteration knee K in tokens (0: none): the s4 term's threshold.
    double kneeTokens = 0;
    double overheadS = 0;     // per batch, outside Backend::run
    double stepOverheadS = 0; // per continuous step; 0: unmeasured, overheadS is charged
    // What a continuous step is charged beside its iteration.
    double stepOverhead() const { return stepOverheadS > 0 ? stepOverheadS : overheadS; }
    bool generative = false; // decode steps are charged
    // A pass's attention is priced on the KV view a server model gives it
    // (StepItem::PassPiece::kvCells: llama-server's view padded to 256
    // cells); false: on each item's own context, as on a server whose
    // attention kernel skips the masked cells (llama.cpp's CPU flash
    // attention). A remote calibration chooses by which fits its probe
    // (RemoteCalibration::paddedKvView).
    bool attentionOnKvView = true;
    // A mixture-of-experts model's routing (0: dense): experts per MoE layer
    // and how many each token goes to; the s6 term's X.
    int experts = 0;
    int expertsPerToken = 0;
    // What the profile measured: the mean distinct experts per MoE layer of
    // a step of `tokens` tokens, beside what uniform routing expects.
    struct ActiveExperts {
        double tokens = 0, measured = 0, expected = 0;
        bool operator==(const ActiveExperts &) const = default;
    };
    std::vector<ActiveExperts> activeExperts;
    // E·(1 − (1 − k/E)^T): the expected distinct experts `tokens` tokens
    // touch when each goes to `perToken` of `experts` uniformly (0 when
    // experts is 0).
    static double expectedActiveExperts(double tokens, int experts, int perToken);
    // Measured / predicted over the fit's whole batches and iterations
    // (what a simulation charges), sorted; at most kResidualSamples
    // quantiles, each the middle of an equal share (sampleQuantiles; a
    // remote server's iterations: up to 1,001 share means of its single
    // steps, remote_fit.cpp). A
    // simulation may charge each unit its prediction
    // times a ratio drawn from these (SimulatorOptions::costNoise), so the
    // spread of real costs, not only their typical value, reaches the queue.
    static constexpr std::size_t kResidualSamples = 101;
    std::vector<double> residuals;          // whole batches
    std::vector<double> iterationResiduals; // iterations
    // Scheduler lateness: how long after its due time (dispatched −
    // intended) a batch or step was dispatched by an executor that was idle
    // (asleep) when it fell due — the wake-up of a thread on this machine,
    // measured from recorded sessions; sorted seconds, at most
    // kResidualSamples quantiles. Empty: none charged. A simulation charges
    // it to every unit an idle executor starts: the median (CostNoise None),
    // the mean (Mean) or a drawn quantile (Drawn).
    std::vector<double> dispatchLateness;
    double latenessAt(double u) const; // quantile u in [0, 1], interpolated; 0 when none
    double meanLateness() const;
    // Contention between executors: concurrency[k − 2] is how much slower a
    // unit runs while k units run at once (k = 2, 3, ...), measured by the
    // profile (measureConcurrency). Empty: no slowdown.
    std::vector<double> concurrency;
    // The slowdown with `units` running at once (1 for one; past the
    // measured ones, the last).
    double slowdownAt(int units) const;

    // One forward pass (request level, or a generative model's prefill).
    double passSeconds(int batch, int paddedLength) const;
    // One decode step over `batch` rows at `context` tokens.
    double stepSeconds(int batch, int context) const;
    // One iteration of step-level generation. Without iteration
    // coefficients (an older calibration): d0 + d1·decodes + d2·context for
    // the decodes, p0 + p1·prefills + p2·tokens + p3·attention for the
    // prompt chunks.
    double iterationSeconds(const StepShape &shape) const;
    bool hasIterationTerms() const;
    // The residual (of iterations, or of whole batches) at quantile u in
    // [0, 1], interpolated; 1 when there are none.
    double residualAt(double u, bool iteration) const;
    // Their mean (1 when there are none).
    double meanResidual(bool iteration) const;

    struct BatchCost {
        Duration run{};        // Backend::run: prefill + every decode step
        Duration firstToken{}; // generative: when the first token of every row exists (the prefill)
        // generative: when each member's own last token exists (the order of
        // `wants`): the prefill and the decode steps up to its want, each
        // over the rows still running then — as the decoder reports
        // SequenceResult::lastTokenAfter. Empty otherwise.
        std::vector<Duration> lastToken;
    };
    // `wants`: each member's max_new_tokens (generative; ignored otherwise,
    // values < 1 count as 1, as the decoder generates at least one token).
    BatchCost batchCost(int batch, int paddedLength, std::span<const int> wants) const;

    // The feature rows behind the predictions, for fitting: a whole batch
    // (pass + steps), a pass alone, one decode step.
    static std::array<double, kTerms> batchTerms(bool generative, int batch, int paddedLength,
                                                 std::span<const int> wants);
    static std::array<double, kTerms> passTerms(int batch, int paddedLength);
    static std::array<double, kTerms> stepTerms(int batch, int context);
    // An iteration's row: [.., 1, n, T, A, 0, E, X, D, C]; the knee term (slot
    // kIterationStart + 4) is derived from T and kneeTokens by predict(). X
    // is expectedActiveExperts(T, experts, perToken).
    static std::array<double, kTerms> iterationTerms(const StepShape &shape, int experts = 0,
                                                     int perToken = 0);
    double predict(const std::array<double, kTerms> &terms) const;
    // `terms` with the knee term filled in for `knee` (iteration rows only).
    static std::array<double, kTerms> withKnee(std::array<double, kTerms> terms, double knee);

    bool operator==(const CostModel &) const = default;
};

// At most CostModel::kResidualSamples quantiles of `values`, sorted: with
// k of them, the one at (i + 0.5) / k for i = 0 .. k − 1, so each stands for
// an equal share and the extremes (a single stall) are not kept (all of
// them when there are no more).
std::vector<double> sampleQuantiles(std::vector<double> values);
// `k` equal shares of the sorted values, each as its mean (all of them
// when there are no more): the sample's mean is the values' mean, and a rare
// large value (a stall in one step of hundreds) keeps its weight in its
// share instead of falling between two middles.
std::vector<double> sampleShareMeans(std::vector<double> values, std::size_t k);

// One measurement for the fit.
struct CostObservation {
    // Batch: a whole Backend::run; Prefill, Step: parts of one; Iteration:
    // one StepModel::step (policy continuous).
    enum class Kind { Batch, Prefill, Step, Iteration };
    Kind kind = Kind::Batch;
    std::array<double, CostModel::kTerms> terms{};
    double seconds = 0; // measured
    // Run-to-run spread of the timings behind `seconds` ((max − min) /
    // median); -1: not repeated (a recorded batch).
    double spread = -1;
    // Iteration of a mixture-of-experts model: the distinct experts per MoE
    // layer the step touched, measured (-1: not measured). The row's X
    // (terms[kIterationStart + 6]) is this when measured.
    double activeExperts = -1;
};

// How well the fit matches the observations it came from: relative errors
// |predicted − measured| / measured.
struct FitError {
    std::size_t observations = 0;
    double medianRel = 0, rmsRel = 0, maxRel = 0;
    bool operator==(const FitError &) const = default;
};

struct FitResult {
    CostModel model;
    FitError error;          // over every observation
    FitError batchError;     // over Kind::Batch only (what a simulation charges)
    FitError iterationError; // over Kind::Iteration only
};

// InvalidArgument when there are no usable observations (measured time <= 0
// rows are skipped) or the terms cannot determine the model.
Result<FitResult> fitCostModel(std::span<const CostObservation> observations, bool generative);

FitError fitError(const CostModel &model, std::span<const CostObservation> observations);

nlohmann::json toJson(const CostModel &model);
nlohmann::json toJson(const FitError &error);
Result<CostModel> costModelFromJson(const nlohmann::json &json);
FitError fitErrorFromJson(const nlohmann::json &json);

} // namespace bp
