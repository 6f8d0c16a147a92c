#include "load_sweep.h"

#include "engine/config/config_json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace bp::bench {

namespace {

const char *const kPrefix = "batchpilot-bench load: ";

// A --compare item's config and label, or why it is not one.
StageResult<std::pair<BatchingConfig, std::string>> compareItem(const std::string &name,
                                                                const BatchingConfig &base)
{
    BatchingConfig c = base;
    std::string label = name;
    if (name.size() > 5 && name.ends_with(".json")) {
        auto loaded = loadConfigFile(name, base);
        if (!loaded)
            return StageError{2, kPrefix + loaded.status().message()};
        c = *loaded;
        label = name.substr(name.find_last_of('/') + 1);
        label.resize(label.size() - 5);
    } else if (auto kind = parsePolicy(name)) {
        c.policy = *kind;
    } else {
        return StageError{2, kPrefix + ("unknown policy '" + name + "' in --compare")};
    }
    return std::pair{c, label};
}

} // namespace

StageResult<std::vector<LoadPolicy>> policiesFromArgs(const Args &args)
{
    const BatchingConfig base = baseConfig(args);
    const std::vector<int> tokenBudgets =
        args.has("max-num-batched-tokens")
            ? parseIntList("max-num-batched-tokens", args.list("max-num-batched-tokens", ""))
            : std::vector<int>{base.continuous.maxNumBatchedTokens};
    const std::vector<int> prefixModes = args.has("prefix-cache")
                                             ? parseSwitchList("prefix-cache", args.list("prefix-cache", ""))
                                             : std::vector<int>{int(base.prefixCache.enabled)};
    std::vector<LoadPolicy> policies;
    for (const auto &name : args.list("compare", "dynamic")) {
        auto item = compareItem(name, base);
        if (!item)
            return item.error();
        const auto &[c, label] = *item;
        const bool sweep = c.policy == PolicyKind::Continuous && tokenBudgets.size() > 1;
        const bool prefixSweep = c.policy == PolicyKind::Continuous && prefixModes.size() > 1;
        for (std::size_t ti = 0; ti < (sweep ? tokenBudgets.size() : 1); ++ti)
            for (std::size_t pi = 0; pi < (prefixSweep ? prefixModes.size() : 1); ++pi) {
                LoadPolicy p{c, "", label, std::nullopt};
                if (sweep)
                    p.config.continuous.maxNumBatchedTokens = tokenBudgets[ti];
                if (prefixSweep)
                    p.config.prefixCache.enabled = prefixModes[pi] != 0;
                if (Status s = validate(p.config); !s)
                    return StageError{2, kPrefix + s.toString()};
                p.label = (sweep ? label + "@" + std::to_string(tokenBudgets[ti]) : label) +
                          (prefixSweep && p.config.prefixCache.enabled ? "+prefix" : "");
                if (args.has("rates-" + label))
                    p.ownRates = args.list("rates-" + label, "");
                policies.push_back(std::move(p));
            }
    }
    return policies;
}

StageResult<LoadCeiling> ceilingFromArgs(const Args &args, Backend &backend, const ModelSpec &spec,
                                         const Setup &setup, const std::vector<LoadPolicy> &policies)
{
    LoadCeiling ceiling;
    if (args.has("ceiling")) {
        auto loaded = loadProfileFile(args.str("ceiling", ""));
        if (!loaded)
            return StageError{1, kPrefix + loaded.status().toString()};
        ceiling.profile = std::move(loaded.value());
        ceiling.source = args.str("ceiling", "");
    } else if (!args.has("no-ceiling")) {
        ProfileOptions po;
        po.lengths = {std::max(1, setup.typicalLength)};
        po.newTokens = std::max(1, setup.typicalNewTokens);
        // The model's best batch size, whatever the policies compared: powers
        // of two up to 64 (the profile's default grid) and each policy's limit.
        po.batchSizes = {1, 2, 4, 8, 16, 32, 64};
        for (const LoadPolicy &p : policies)
            po.batchSizes.push_back(batchLimit(p.config));
        std::sort(po.batchSizes.begin(), po.batchSizes.end());
        po.batchSizes.erase(std::unique(po.batchSizes.begin(), po.batchSizes.end()), po.batchSizes.end());
        po.repeats = 3;
        std::fprintf(
            stderr,
            "measuring the ceiling inline (length %d, batch 1..%d; pass --ceiling FILE to reuse a profile)\n",
            po.lengths[0], po.batchSizes.back());
        auto measured = profileBackend(backend, spec, po);
        if (!measured)
            return StageError{1, kPrefix + ("ceiling: " + measured.status().toString())};
        ceiling.profile = std::move(measured.value());
        ceiling.source = "measured inline";
    }
    if (const ProfileCell *cell =
            ceiling.profile ? ceilingCell(*ceiling.profile, setup.typicalLength) : nullptr) {
        ceiling.cell = *cell;
        ceiling.rate = ceilingValue(*ceiling.profile, *cell);
    }
    return ceiling;
}

double throughputOf(const LoadRunResult &r, bool generative)
{
    return generative ? r.outputTokensPerS : r.requestsPerS;
}

double p99Ms(const LoadRunResult &r)
{
    return double(r.latency.quantile(0.99)) / 1e6;
}

StageResult<std::vector<LoadSweepRun>> runLoadSweep(const std::shared_ptr<Backend> &backend,
                                                    const std::vector<LoadPolicy> &policies,
                                                    const Setup &setup, const Slo &slo,
                                                    const std::function<void(const LoadSweepRun &)> &done)
{
    std::vector<LoadSweepRun> runs;
    for (std::size_t pi = 0; pi < policies.size(); ++pi) {
        const LoadPolicy &policy = policies[pi];
        std::vector<double> rates = setup.rates;
        if (policy.ownRates && setup.workload.arrivals != ArrivalKind::Trace) {
            rates.clear();
            for (const auto &item : *policy.ownRates)
                rates.push_back(std::stod(item));
        }
        for (double rate : rates) {
            LoadRunOptions o;
            o.config = policy.config;
            o.workload = setup.workload;
            o.warmupS = setup.warmupS;
            o.durationS = setup.durationS;
            o.drainS = setup.drainS;
            o.slo = slo;
            if (o.workload.arrivals != ArrivalKind::Trace) {
                o.workload.rate = rate;
                // Arrivals stop at the end of the window (runLoad), not after a
                // count: rate x span arrivals of a random process end before
                // the span about half the time and truncate the window.
                o.workload.limit = std::size_t(std::ceil(2 * rate * (setup.warmupS + setup.durationS))) + 100;
            }
            auto result = runLoad(backend, o);
            if (!result)
                return StageError{1, kPrefix + policy.label + ": " + result.status().toString()};
            runs.push_back({pi, rate, std::move(*result)});
            done(runs.back());
        }
    }
    return runs;
}

std::map<std::string, BestUnderBudget> bestUnderBudget(const std::vector<LoadSweepRun> &runs,
                                                       const std::vector<LoadPolicy> &policies,
                                                       bool generative, double budgetMs)
{
    std::map<std::string, BestUnderBudget> best;
    for (const LoadSweepRun &run : runs) {
        const LoadRunResult &r = run.result;
        const double throughput = throughputOf(r, generative), p99 = p99Ms(r);
        if (!(budgetMs > 0 && r.clean() && p99 <= budgetMs))
            continue;
        BestUnderBudget &b = best[policies[run.policy].label];
        if (!b.any || throughput > b.throughput)
            b = {run.rate, r.offeredRate, throughput, p99, true};
    }
    return best;
}

std::map<std::string, BestGoodput> bestGoodput(const std::vector<LoadSweepRun> &runs,
                                               const std::vector<LoadPolicy> &policies,
                                               double attainmentTarget)
{
    std::map<std::string, BestGoodput> best;
    for (const LoadSweepRun &run : runs) {
        const LoadRunResult &r = run.result;
        BestGoodput &g = best[policies[run.policy].label];
        if (!g.any || r.goodputPerS > g.goodput) {
            g.rate = run.rate;
            g.offered = r.offeredRate;
            g.goodput = r.goodputPerS;
            g.attainment = r.attainment;
            g.any = true;
        }
        if (r.attainment >= attainmentTarget && (!g.attained || r.offeredRate > g.attainedOffered)) {
            g.attained = true;
            g.attainedRate = run.rate;
            g.attainedOffered = r.offeredRate;
        }
    }
    return best;
}

} // namespace bp::bench
