// The tuner: searches the batching knobs in simulation for
// the config that best serves a trace under a service-level objective, and
// says how much more load that config takes before it misses the SLO.
//
// Inputs: the trace (the replay plan's arrivals), a cost model (a
// calibration), an SLO on percentiles — `p99<=200ms` (end to end) or
// `ttft_p99<=500ms,tpot_p99<=50ms` — and an objective:
//  - goodput: the most requests per second that complete within every
//    per-request bound (a request meets `p99<=X` when its own latency is
//    <= X); candidates that miss the p99 SLO still compete (a higher goodput
//    with a few more late requests wins), as DistServe ranks configs;
//  - throughput: the most completed requests per second among the
//    candidates that meet the SLO.
// A candidate meets the SLO when the p99 of each bounded metric, over every
// request of the trace (one that failed or was refused counts as infinitely
// late), is within its bound.
//
// Search (tune()): a coarse grid over the knob table's space — policy none,
// dynamic, dynamic with the adaptive delay, bucketed (edges from the bucket
// advisor, proposeBucketEdges(), 2 and 4 buckets), hybrid (static sizes
// b/4, b/2, b; the median length routes), static (padded to the longest
// input), each × max batch 2..64 (powers of two) × queue delay 0.5..20 ms
// where it applies, and for a generative model continuous × max_num_seqs
// 8..64 × max_num_batched_tokens 256 / 1024 × the prefix cache off, on at
// block 16 and on at the trace's own block size (TuneOptions::
// prefixBlockTokens, when it has one) — all × instances 1..maxInstances
// (88 points per instance count, 104 or 112 with continuous),
// thinned evenly when the grid alone exceeds 3/4 of the budget. Then a
// pattern search from the best of each policy family, best family first:
// the integer knob (max batch / static size / max_num_seqs) moves by ± a
// step (starting at half its value), the delay (continuous: the token
// budget) by ×(1 ± a relative step, starting at 50%), instances and the
// bucket count by ± 1, continuous's prefix cache toggles and its block size
// moves to the next of 16, 32, 64 and the trace's own; the family's best so far is the next centre; when no
// neighbour improves the steps halve (down to ±1 and ±6.25%) and the family
// is done when the smallest steps find nothing. Candidates are
// deduplicated; every config passes validate() (the knob table's ranges)
// before it runs.
//
// Ranking (better()): the objective's value, where values within 1% of each
// other tie; then the lower SLO ratio (the worst p99 / bound); then fewer
// instances; then (continuous) the prefix cache off, or on at block 16;
// then the smaller max batch (same policy). For `throughput`
// the candidates that meet the SLO come first (among those that do not,
// the lower SLO ratio). At the trace's own load many configs serve it
// equally well, so the recommendation is decided by headroom: the
// candidates tied with the best (within 1%, meeting the SLO; at most 64,
// spread over the search) enter a capacity tournament — a bisection on the
// speed factor in which every survivor is simulated at each step and those
// that miss the SLO drop out, until one is left and its bisection reaches
// 2% (survivors tied to 2% keep their ranking). The winner is recommended.
//
// Capacity: the highest speed factor s (every arrival gap divided by s, on
// top of the trace's own --speed) at which the config still meets the SLO,
// to 2%: doubling from 1 until it misses (at most 4096), then bisection.
// When the best candidate misses the SLO at s = 1, its capacity is searched
// downwards (halving to 1/64; 0 when it misses even there).
//
// Threading: tune() blocks the calling thread; `progress` runs on it;
// `cancel` may be set from any thread and is checked between candidates
// (the result then holds what was evaluated, `cancelled` set). With
// `threads` > 1 candidates are simulated in parallel (the evaluator must
// then be thread-safe; the simulation evaluator is). Qt-free.
#pragma once

#include "engine/sim/simulation/simulator.h"

#include "engine/core/batching_config.h"
#include "engine/core/result.h"

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace bp {

// The origin of a config change that applies a recommendation live (the
// console's Advisor dock, ui/advisor_dock.h), next to the engine's own
// kSloControllerOrigin and kMemoryGuardOrigin.
inline constexpr std::string_view kAdvisorOrigin = "advisor";

// Bounds on p99s; zero = not bounded.
struct TuneSlo {
    Duration e2eP99{}, ttftP99{}, tpotP99{};
    bool any() const;
    bool tokenLevel() const { return ttftP99 > Duration::zero() || tpotP99 > Duration::zero(); }
};
// "p99<=200ms", "ttft_p99<=500ms,tpot_p99<=50ms" (any of p99 / e2e_p99,
// ttft_p99, tpot_p99, each once, comma-separated; units us, ms, s).
// InvalidArgument naming the bad item otherwise.
Result<TuneSlo> parseTuneSlo(std::string_view spec);
std::string describe(const TuneSlo &slo); // "p99 <= 200 ms"

enum class TuneObjective { Goodput, Throughput };
std::optional<TuneObjective> parseTuneObjective(std::string_view name);
std::string_view tuneObjectiveName(TuneObjective objective);

// The bucket advisor: up to `buckets` equal-count length buckets for these
// input lengths. Edge i (1-based) is the smallest length at or above which
// i/buckets of the lengths lie (the nearest-rank quantile); the last edge is
// the longest length, so nothing overflows. Duplicates (many equal lengths)
// are dropped, so there may be fewer edges. `buckets` is clamped to [1, 32];
// no lengths -> no edges.
std::vector<int> proposeBucketEdges(std::span<const int> lengths, int buckets);

// One request as it ended, in a simulation or a real replay.
struct TuneSample {
    Duration arrival{}; // offset from the run's start
    Duration total{};   // arrival -> completion (OK only)
    Duration ttft{};    // arrival -> first token (0 = none)
    // As the engine recorded it (timePerOutputToken(), engine/core/request.h);
    // 0 = none (fewer than two tokens).
    Duration tpot{};
    int outputTokens = 0;
    bool ok = false;
    // Refused because the model cannot take it under any config (input +
    // new tokens beyond its positions: out_of_range): left out of every
    // figure and counted in TuneFigures::unservable.
    bool unservable = false;
    std::uint64_t id = 0;               // the request's (the replay's position + 1)
    StatusCode status = StatusCode::Ok; // a failed one's reason (expired, rejected, ...)
};

// What one config does with the trace (predicted by the simulator, or
// measured by a replay). Latencies in seconds; a percentile is +inf when
// more than that share of the requests failed.
struct TuneFigures {
    std::size_t requests = 0, completed = 0, good = 0;
    std::size_t unservable = 0; // out of the model's range whatever the config; not in `requests`
    // The requests that did not complete, by status name ("expired",
    // "resource_exhausted", ...; "not_run" for one the run never reported):
    // why a percentile is +inf.
    std::map<std::string, std::size_t> failures;
    double throughputPerS = 0; // completed / (first arrival -> last of: arrival, completion)
    double goodputPerS = 0;    // good (completed within every per-request bound) / the same span
    double p50S = 0, p99S = 0; // end to end, every request
    double ttftP50S = 0, ttftP99S = 0, tpotP50S = 0, tpotP99S = 0; // generative
    double meanBatch = 0;
    double sloRatio = 0; // max over the bounded metrics of p99 / bound (<= 1: met)
    bool sloMet = false;
};
// The figures of `samples` (`requests` of them were sent; the missing ones
// count as failed; the unservable ones are left out) under `slo`. TPOT: each
// sample's own (the engine's definition); a request without one (fewer than
// two tokens) meets any TPOT bound.
TuneFigures figuresOf(std::span<const TuneSample> samples, std::size_t requests, const TuneSlo &slo);

// The pick against the config running now: a change is
// recommended only when the pick is better by more than the cost model can
// tell apart. `margin` is the fit's spread (sim_interval.h: fitSpread), at
// least 1%:
//  - the current config meets the SLO: keep it unless the pick meets it too
//    with a goodput more than `margin` above the current one's;
//  - it does not: change when the pick meets the SLO, or has a goodput more
//    than `margin` above; else keep it (nothing found is better).
struct CurrentVerdict {
    bool currentMeets = false;
    bool keep = false; // recommend no change
    double gain = 0;   // pick goodput / current goodput − 1 (inf when the current's is 0)
    double margin = 0; // the bar `gain` had to clear
};
CurrentVerdict judgeAgainstCurrent(const TuneFigures &current, const TuneFigures &pick, double spread);

struct TuneCandidate {
    BatchingConfig config;
    TuneFigures figures;
    std::string label; // "dynamic b16 d5ms x2"
    bool pareto = false;
};
std::string candidateLabel(const BatchingConfig &config);

// Indices of the candidates on the Pareto front of throughput (higher is
// better) against the SLO ratio (lower is better): no other candidate has
// at least the throughput and at most the ratio, one of them strictly.
// Ordered by SLO ratio, ascending. Equal points: the first one only.
std::vector<std::size_t> paretoFront(std::span<const TuneCandidate> candidates);

// The evaluation of one config at a speed factor (1 = the trace as given;
// 2 = every gap halved). Must be thread-safe when TuneOptions::threads > 1.
using TuneEvaluator = std::function<TuneFigures(const BatchingConfig &config, double speedFactor)>;

// What the simulation evaluator needs: the trace and the cost model's facts.
struct TuneWorkload {
    std::vector<PlannedArrival> arrivals; // in offset order
    // The simulator's view of the model: limits, cost model, output kind,
    // positions, and how each batch and step is charged (costNoise: the
    // drawn residuals and scheduler lateness of the calibration by default,
    // seeded, so every candidate meets the same draws). The config, the
    // observer and the sampling are set per evaluation.
    // simulatorOptionsFor() (tune_pipeline.h) fills it from a calibration.
    SimulatorOptions model = [] {
        SimulatorOptions o;
        o.costNoise = CostNoise::Drawn;
        return o;
    }();
    // A remote server's per-request path outside its steps (the remote
    // calibration's `o`: HTTP, tokenisation, network): added to every
    // request's TTFT and end-to-end time. Zero for the embedded engine.
    Duration requestOverhead{};
    bool generative() const { return model.output == OutputKind::Generated; }
};
// Runs the Simulator for each call (nothing is recorded). Thread-safe.
TuneEvaluator simulationEvaluator(const TuneWorkload &workload, const TuneSlo &slo);

// One simulation: every request as it ended (in completion order), the mean
// batch and the outcome. `options.observer` is replaced; no samples are taken.
struct SimulatedSamples {
    std::vector<TuneSample> samples;
    double meanBatch = 0;
    SimOutcome outcome;
};
SimulatedSamples simulateSamples(SimulatorOptions options, std::span<const PlannedArrival> arrivals);

struct TuneOptions {
    TuneSlo slo;
    TuneObjective objective = TuneObjective::Goodput;
    std::size_t budget = 240; // candidate configs evaluated at most (capacity probes not counted)
    int maxInstances = 2;     // instances searched: 1..maxInstances, [1, 16]
    // Knobs not searched (queue capacity, priorities, cache, ...) come from
    // here; its policy and searched knobs are ignored.
    BatchingConfig base;
    std::vector<int> inputLengths; // the trace's, for the bucket advisor and static's padded length
    int maxLength = 0;             // the model's maximum input length (0 = none)
    bool generative = false;       // the continuous policy applies
    // The trace's prefix block size (tokens per hash id) when it has prefix
    // blocks, else 0: continuous searches it as prefix_cache.block_tokens
    // beside 16, 32 and 64.
    int prefixBlockTokens = 0;
    bool capacity = true; // run the capacity search for the finalists
    int threads = 1;      // parallel evaluations, [1, 16]
    // Called after every evaluation (candidates and capacity probes) with
    // (done, total) — total is the budget plus the capacity probes' estimate,
    // so it may shrink when the search ends early.
    std::function<void(std::size_t done, std::size_t total)> progress;
    const std::atomic<bool> *cancel = nullptr;
};

struct TuneResult {
    std::vector<TuneCandidate> candidates; // in evaluation order
    std::vector<std::size_t> pareto;       // paretoFront(candidates)
    std::optional<std::size_t> recommended;
    double capacity = 0;    // the recommendation's speed factor (see above; 0: misses even at 1/64)
    std::size_t probes = 0; // capacity evaluations (not counted in the budget)
    std::size_t coarse = 0; // candidates of the coarse grid (the rest: refinement)
    bool anyMet = false;    // some candidate met the SLO
    bool cancelled = false;
    double wallSeconds = 0;
};

// InvalidArgument for an SLO without bounds or bad options.
Result<TuneResult> tune(const TuneEvaluator &evaluate, const TuneOptions &options);

// Is `a` ranked above `b` for this objective (the ranking above)?
bool better(const TuneFigures &a, const BatchingConfig &ac, const TuneFigures &b, const BatchingConfig &bc,
            TuneObjective objective);

// The capacity search alone (see above), with the evaluations it took.
struct CapacityResult {
    double speed = 0;
    std::size_t probes = 0;
};
CapacityResult findCapacity(const TuneEvaluator &evaluate, const BatchingConfig &config,
                            const std::atomic<bool> *cancel = nullptr);

} // namespace bp
