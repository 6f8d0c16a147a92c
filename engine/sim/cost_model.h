// A cost model: how long Backend::run takes for a batch, as a function of
// its shape, fitted from measurements (issue 15 item 1). The simulator
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
// profile cannot see it.
#pragma once

#include "engine/clock.h"
#include "engine/result.h"

#include <nlohmann/json.hpp>

#include <array>
#include <span>
#include <string>
#include <vector>

namespace bp {

struct CostModel {
    static constexpr int kPassTerms = 4;
    static constexpr int kStepTerms = 3;
    static constexpr int kTerms = kPassTerms + kStepTerms;
    // [p0, p1, p2, p3, d0, d1, d2], seconds per unit of each term.
    std::array<double, kTerms> coef{};
    double overheadS = 0;    // per batch, outside Backend::run
    bool generative = false; // decode steps are charged

    // One forward pass (request level, or a generative model's prefill).
    double passSeconds(int batch, int paddedLength) const;
    // One decode step over `batch` rows at `context` tokens.
    double stepSeconds(int batch, int context) const;

    struct BatchCost {
        Duration run{};        // Backend::run: prefill + every decode step
        Duration firstToken{}; // generative: when the first token of every row exists (the prefill)
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
    double predict(const std::array<double, kTerms> &terms) const;

    bool operator==(const CostModel &) const = default;
};

// One measurement for the fit.
struct CostObservation {
    enum class Kind { Batch, Prefill, Step };
    Kind kind = Kind::Batch;
    std::array<double, CostModel::kTerms> terms{};
    double seconds = 0; // measured
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
    FitError error;      // over every observation
    FitError batchError; // over Kind::Batch only (what a simulation charges)
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
