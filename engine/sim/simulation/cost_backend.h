// The simulator's model: a Backend (and StepModel) whose run charges the
// cost model's predicted time to a virtual clock instead of computing. The
// engine's executor step (engine/exec/engine_core.h) runs on it unchanged: it
// reads the clock before and after the model call, and the difference is
// the prediction (times a residual drawn from the calibration's fit, as
// SimulatorOptions::costNoise says).
//
// What it answers is what the real model would: a decoder refuses a member
// whose input + new tokens pass its positions (OutOfRange; the rest run),
// generates max(1, max_new_tokens) tokens (zeros), an encoder returns no
// tokens, builtin:echo returns max_new_tokens tokens or the input. Its
// first- and last-token times follow the prediction: the prefill's share of
// the charged run, then the decode steps in lockstep (a member's last token
// comes when its own output is complete), so TTFT and TPOT come out of the
// engine's one definition (engine/sched/outcome.h).
//
// Steps (policy `continuous`): it keeps each live sequence's cached length,
// as the real decoder keeps its KV cache, so that it can price what each
// step feeds and attends to (CostModel::iterationSeconds). With prefix
// caching a sequence that starts from kept blocks attends to them but is
// charged only for the tokens it feeds, as the real step.
//
// Single-threaded: the simulator's event loop is its only caller.
#pragma once

#include "engine/sim/calibration/cost_model.h"

#include "engine/core/clock.h"
#include "engine/model/backend.h"
#include "engine/model/kept_blocks.h"

#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <unordered_map>

namespace bp {

// How a unit's cost is charged: its prediction (None), times the mean
// residual of the calibration's fit (Mean), or times a residual drawn at
// random, seeded (Drawn).
enum class CostNoise { None, Mean, Drawn };
// "none", "mean", "drawn"; nullopt for anything else.
std::optional<CostNoise> parseCostNoise(std::string_view name);
std::string_view costNoiseName(CostNoise noise);

// How a request's output is counted, as the model would produce it.
enum class OutputKind {
    None,      // an encoder: values, no tokens
    Echo,      // builtin:echo: max_new_tokens generated tokens, or the input when 0
    Generated, // a decoder: max(1, max_new_tokens) tokens
};

// The simulator's clock: virtual time, set by the event loop. While a unit
// runs on the CostBackend it reads that unit's own time, which the backend
// advances by what it charges.
class VirtualClock final : public Clock {
public:
    explicit VirtualClock(TimePoint start) : m_now(start) {}
    TimePoint now() const override { return m_now; }
    void set(TimePoint t) { m_now = t; }
    void charge(Duration d) { m_now += d; }

private:
    TimePoint m_now;
};

// The simulator's random draws (cost residuals, scheduler lateness), from
// one seeded generator so that a run is reproducible.
class NoiseDraws {
public:
    NoiseDraws(CostNoise mode, std::uint64_t seed) : m_mode(mode), m_rng(seed) {}
    CostNoise mode() const { return m_mode; }
    double uniform() { return m_unit(m_rng); }

private:
    CostNoise m_mode;
    std::mt19937_64 m_rng;
    std::uniform_real_distribution<double> m_unit{0.0, 1.0};
};

class CostBackend final : public Backend, public StepModel {
public:
    // `cost`, `clock` and `noise` outlive the backend.
    CostBackend(const CostModel &cost, VirtualClock &clock, NoiseDraws &noise, ModelLimits limits,
                OutputKind output, int positions);

    const ModelInfo &info() const override { return m_info; }
    Status run(const BatchInput &input, std::vector<SequenceResult> &out) override;
    StepModel *steps() override { return this; }

    Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) override;
    void release(std::uint64_t sequence) override;
    std::int64_t cachedTokens() const override { return m_cached; }
    bool cachesPrefixes() const override { return true; }
    void dropBlocks(const std::vector<std::uint64_t> &hashes) override { m_kept.drop(hashes); }

    // Units running at once, this one included, for the next run(): the
    // calibration's contention slowdown (CostModel::slowdownAt).
    void setConcurrentUnits(int units) { m_units = units; }
    // A unit `seconds` long as charged.
    Duration charge(double seconds, bool iteration);

    // Decode runs (EngineCore::beginDecodeRunLocked), as step() would see
    // their steps one by one. The live sequences' context between them
    // before the run, and how many steps the model's positions allow.
    struct DecodeSpan {
        std::int64_t context = 0;
        int steps = 0;
    };
    DecodeSpan decodeSpan(std::span<const std::uint64_t> sequences) const;
    // The charged time of a step decoding `n` sequences whose context sums
    // to `context` tokens before it (one noise draw, as step()).
    Duration chargeDecodes(int n, std::int64_t context);
    // The run's first `steps` steps ran: each sequence holds that many more tokens.
    void advanceDecodes(std::span<const std::uint64_t> sequences, int steps);

private:
    int outputTokens(const Request &r) const;

    const CostModel &m_cost;
    VirtualClock &m_clock;
    NoiseDraws &m_noise;
    ModelInfo m_info;
    OutputKind m_output;
    int m_positions = 0;
    int m_units = 1;
    std::unordered_map<std::uint64_t, std::int64_t> m_lengths; // live sequence -> cached tokens
    std::int64_t m_cached = 0;
    KeptBlocks<std::int64_t> m_kept; // prefix caching: each kept block's length
};

} // namespace bp
