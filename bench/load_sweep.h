// The parts of `batchpilot-bench load` (load_bench.h) between its flags and
// its printer: the policies compared, the ceiling, the sweep of runs (one
// runLoad() per policy and rate, load_run.h) and the summaries over them.
// Qt-free.
#pragma once

#include "bench_util.h"
#include "load_run.h"
#include "load_setup.h"
#include "model_profile.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bp::bench {

// One policy of the sweep: a --compare item, a policy name (the base config
// with that policy) or a config file NAME.json applied on top of the base
// and labelled NAME (e.g. bench/strategies/adaptive.json), expanded into a
// run each by several --max-num-batched-tokens (labelled continuous@T) and
// by --prefix-cache 0,1 (the second labelled +prefix).
struct LoadPolicy {
    BatchingConfig config;
    std::string label;
    std::string rateKey; // whose --rates-<key> applies: the --compare item's label
    // --rates-<rateKey> as given; converted when the policy's turn comes
    // (a malformed item stops the sweep there, after the runs before it).
    std::optional<std::vector<std::string>> ownRates;
};
// StageError (rc 2) for an unknown policy, a config file that does not load
// or a config that does not validate. Throws std::invalid_argument on a
// malformed knob flag (baseConfig).
StageResult<std::vector<LoadPolicy>> policiesFromArgs(const Args &args);

// The ceiling: a saved profile (--ceiling FILE), a small grid measured now
// (the default; it says so on stderr), or none (--no-ceiling).
struct LoadCeiling {
    std::optional<ProfileResult> profile;
    std::optional<ProfileCell> cell; // the profile's best at the workload's length
    double rate = 0;                 // its throughput: output tok/s (decoders) or sequences/s
    std::string source;              // the --ceiling file, or "measured inline"
};
StageResult<LoadCeiling> ceilingFromArgs(const Args &args, Backend &backend, const ModelSpec &spec,
                                         const Setup &setup, const std::vector<LoadPolicy> &policies);

// One run of the sweep.
struct LoadSweepRun {
    std::size_t policy = 0; // index into the policies
    double rate = 0;        // the rate asked (the trace's own rate for a trace)
    LoadRunResult result;
};
// Output tokens/s for a decoder, requests/s otherwise: what the ceiling and
// the budget summary compare.
double throughputOf(const LoadRunResult &r, bool generative);
double p99Ms(const LoadRunResult &r);

// Every policy in turn at each of its rates (--rates, or its own
// --rates-<key> unless the arrivals come from a trace), a fresh engine each;
// `done` sees each run as it finishes. Stops at the first run that fails.
StageResult<std::vector<LoadSweepRun>> runLoadSweep(const std::shared_ptr<Backend> &backend,
                                                    const std::vector<LoadPolicy> &policies,
                                                    const Setup &setup, const Slo &slo,
                                                    const std::function<void(const LoadSweepRun &)> &done);

// Per label, the run with the best throughput among the clean ones whose
// p99 is within the budget.
struct BestUnderBudget {
    double rate = 0, offered = 0, throughput = 0, p99 = 0; // rate: asked; offered: what arrived
    bool any = false;
};
std::map<std::string, BestUnderBudget> bestUnderBudget(const std::vector<LoadSweepRun> &runs,
                                                       const std::vector<LoadPolicy> &policies,
                                                       bool generative, double budgetMs);

// Per label, with an SLO: the rate with the most goodput, and the highest
// offered rate whose attainment reached the target.
struct BestGoodput {
    double rate = 0, offered = 0, goodput = 0, attainment = 0; // the rate with the most goodput
    double attainedRate = 0, attainedOffered = 0;              // highest rate meeting the attainment target
    bool any = false, attained = false;
};
std::map<std::string, BestGoodput> bestGoodput(const std::vector<LoadSweepRun> &runs,
                                               const std::vector<LoadPolicy> &policies,
                                               double attainmentTarget);

} // namespace bp::bench
