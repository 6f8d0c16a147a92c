// batchpilot-bench load [model flags] [workload flags] [policy flags]
//   --compare none,static,dynamic,bucketed,continuous  [--rates R1,R2,.. --p99-budget-ms B]
//   [--slo ttft=500ms,tpot=50ms,e2e=2s]  (goodput columns and a goodput-at-SLO search over rates)
//   [--ceiling PROFILE.json | --no-ceiling] [--json FILE]
#include "load_bench.h"

#include "load_run.h"
#include "load_setup.h"
#include "model_profile.h"

#include "engine/config/config_json.h"
#include "engine/workload/trace_csv.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>

namespace bp::bench {

int runLoadBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, loadStage()); rc >= 0)
        return rc;
    // A malformed --slo is refused before any model is loaded.
    Slo slo;
    if (args.has("slo")) {
        auto parsed = parseSlo(args.str("slo", ""));
        if (!parsed) {
            std::cerr << "batchpilot-bench load: " << parsed.status().message() << "\n";
            return 2;
        }
        slo = *parsed;
    }
    const ModelSpec spec = modelSpecFromArgs(args);
    auto created = createBackend(spec);
    if (!created) {
        std::cerr << "batchpilot-bench load: " << created.status().toString() << "\n";
        return 1;
    }
    std::shared_ptr<Backend> backend = std::move(created.value());
    const ModelInfo &model = backend->info();
    const bool generative = model.generative;
    const Setup setup = workloadFromArgs(args, model);
    if (args.has("slo") && slo.tokenLevel() && !generative) {
        std::cerr << "batchpilot-bench load: --slo ttft/tpot need a generative model (" << model.name
                  << " generates no tokens); use e2e=\n";
        return 2;
    }
    const double attainmentTarget = args.num("slo-attainment", 0.9);
    if (!(attainmentTarget > 0 && attainmentTarget <= 1)) {
        std::cerr << "batchpilot-bench load: --slo-attainment must be in (0, 1]\n";
        return 2;
    }

    // --compare items: a policy name (the base config with that policy), or
    // a config file NAME.json applied on top of the base and labelled NAME
    // (e.g. bench/strategies/adaptive.json for the optimization strategies).
    std::vector<BatchingConfig> configs;
    std::vector<std::string> labels, rateKeys; // rateKeys: whose --rates-<name> applies
    const BatchingConfig base = baseConfig(args);
    const std::vector<int> tokenBudgets =
        args.has("max-num-batched-tokens")
            ? parseIntList("max-num-batched-tokens", args.list("max-num-batched-tokens", ""))
            : std::vector<int>{base.continuous.maxNumBatchedTokens};
    // --prefix-cache 0,1: continuous with the prefix cache off and on, one
    // run each (the second labelled +prefix).
    const std::vector<int> prefixModes = args.has("prefix-cache")
                                             ? parseSwitchList("prefix-cache", args.list("prefix-cache", ""))
                                             : std::vector<int>{int(base.prefixCache.enabled)};
    for (const auto &name : args.list("compare", "dynamic")) {
        BatchingConfig c = base;
        std::string label = name;
        if (name.size() > 5 && name.ends_with(".json")) {
            auto loaded = loadConfigFile(name, base);
            if (!loaded) {
                std::cerr << "batchpilot-bench load: " << loaded.status().message() << "\n";
                return 2;
            }
            c = *loaded;
            label = name.substr(name.find_last_of('/') + 1);
            label.resize(label.size() - 5);
        } else if (auto kind = parsePolicy(name)) {
            c.policy = *kind;
        } else {
            std::cerr << "batchpilot-bench load: unknown policy '" << name << "' in --compare\n";
            return 2;
        }
        // continuous with several --max-num-batched-tokens: one run each
        // (the knee of the token budget), labelled continuous@T.
        const bool sweep = c.policy == PolicyKind::Continuous && tokenBudgets.size() > 1;
        const bool prefixSweep = c.policy == PolicyKind::Continuous && prefixModes.size() > 1;
        for (std::size_t ti = 0; ti < (sweep ? tokenBudgets.size() : 1); ++ti)
            for (std::size_t pi = 0; pi < (prefixSweep ? prefixModes.size() : 1); ++pi) {
                BatchingConfig v = c;
                if (sweep)
                    v.continuous.maxNumBatchedTokens = tokenBudgets[ti];
                if (prefixSweep)
                    v.prefixCache.enabled = prefixModes[pi] != 0;
                if (Status s = validate(v); !s) {
                    std::cerr << "batchpilot-bench load: " << s.toString() << "\n";
                    return 2;
                }
                configs.push_back(v);
                labels.push_back((sweep ? label + "@" + std::to_string(tokenBudgets[ti]) : label) +
                                 (prefixSweep && v.prefixCache.enabled ? "+prefix" : ""));
                rateKeys.push_back(label);
            }
    }

    // The ceiling: a saved profile, or a small grid measured now.
    std::optional<ProfileResult> ceiling;
    if (args.has("ceiling")) {
        auto loaded = loadProfileFile(args.str("ceiling", ""));
        if (!loaded) {
            std::cerr << "batchpilot-bench load: " << loaded.status().toString() << "\n";
            return 1;
        }
        ceiling = std::move(loaded.value());
    } else if (!args.has("no-ceiling")) {
        ProfileOptions po;
        po.lengths = {std::max(1, setup.typicalLength)};
        po.newTokens = std::max(1, setup.typicalNewTokens);
        // The model's best batch size, whatever the policies compared: powers
        // of two up to 64 (the profile's default grid) and each policy's limit.
        po.batchSizes = {1, 2, 4, 8, 16, 32, 64};
        for (const auto &c : configs)
            po.batchSizes.push_back(batchLimit(c));
        std::sort(po.batchSizes.begin(), po.batchSizes.end());
        po.batchSizes.erase(std::unique(po.batchSizes.begin(), po.batchSizes.end()), po.batchSizes.end());
        po.repeats = 3;
        std::fprintf(
            stderr,
            "measuring the ceiling inline (length %d, batch 1..%d; pass --ceiling FILE to reuse a profile)\n",
            po.lengths[0], po.batchSizes.back());
        auto measured = profileBackend(*backend, spec, po);
        if (!measured) {
            std::cerr << "batchpilot-bench load: ceiling: " << measured.status().toString() << "\n";
            return 1;
        }
        ceiling = std::move(measured.value());
    }
    const ProfileCell *ceilingAt = ceiling ? ceilingCell(*ceiling, setup.typicalLength) : nullptr;
    const double ceilingRate = ceilingAt ? ceilingValue(*ceiling, *ceilingAt) : 0;
    const char *unit = generative ? "output tok/s" : "req/s";

    std::printf("batchpilot-bench load  model %s%s on %s (%.2f M parameters)\n", model.name.c_str(),
                spec.name.rfind("builtin:", 0) == 0 ? (" preset " + spec.preset).c_str() : "",
                model.device.c_str(), double(model.parameters) / 1e6);
    std::printf(
        "  workload: %s; warm-up %.1f s, window %.1f s, drain <= %.1f s; latency from scheduled arrival\n",
        setup.describe.c_str(), setup.warmupS, setup.durationS, setup.drainS);
    std::printf(
        "  counted: the requests that arrived in the window (throughput = those completed OK / window)\n");
    if (slo.any())
        std::printf("  SLO: %s; goodput = the window's arrivals that completed OK within it / window\n",
                    describe(slo).c_str());
    if (ceilingAt)
        std::printf("  ceiling: %.1f %s = the profile's best, at batch %d x length %d (%s); ceil = "
                    "throughput / ceiling\n",
                    ceilingRate, unit, ceilingAt->batch, ceilingAt->length,
                    args.has("ceiling") ? args.str("ceiling", "").c_str() : "measured inline");
    std::printf("\n%-14s %-30s %8s %8s %6s %9s %10s %9s %9s %9s %6s %6s %7s", "policy", "knobs", "offered",
                "req/s", "rej", generative ? "out tok/s" : "in tok/s", "p50 ms", "p90 ms", "p99 ms",
                "pad eff", "batch", "ceil", "");
    if (generative)
        std::printf(" %9s %9s %9s %9s %6s", "ttft p50", "ttft p99", "tpot p50", "tpot p99", "hit%");
    if (slo.any())
        std::printf(" %8s %6s", "goodput", "slo%");
    std::printf("\n");

    nlohmann::json runs = nlohmann::json::array();
    struct Best {
        double rate = 0, offered = 0, throughput = 0, p99 = 0; // rate: asked; offered: what arrived
        bool any = false;
    };
    std::map<std::string, Best> best;
    const double budgetMs = args.num("p99-budget-ms", 0);
    struct BestGoodput {
        double rate = 0, offered = 0, goodput = 0, attainment = 0; // the rate with the most goodput
        double attainedRate = 0, attainedOffered = 0; // highest rate meeting the attainment target
        bool any = false, attained = false;
    };
    std::map<std::string, BestGoodput> bestGoodput;

    for (std::size_t ci = 0; ci < configs.size(); ++ci) {
        const BatchingConfig &config = configs[ci];
        const std::string &policy = labels[ci];
        std::vector<double> rates = setup.rates;
        if (args.has("rates-" + rateKeys[ci]) && setup.workload.arrivals != ArrivalKind::Trace) {
            rates.clear();
            for (const auto &item : args.list("rates-" + rateKeys[ci], ""))
                rates.push_back(std::stod(item));
        }
        for (double rate : rates) {
            LoadRunOptions o;
            o.config = config;
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
            if (!result) {
                std::cerr << "batchpilot-bench load: " << policy << ": " << result.status().toString()
                          << "\n";
                return 1;
            }
            const LoadRunResult &r = *result;
            const double throughput = generative ? r.outputTokensPerS : r.requestsPerS;
            const double fraction = ceilingRate > 0 ? throughput / ceilingRate : 0;
            auto ms = [](const LatencyHistogram &h, double q) { return double(h.quantile(q)) / 1e6; };
            std::printf("%-14s %-30s %8.1f %8.1f %6llu %9.1f %10.1f %9.1f %9.1f %9.3f %6.1f %6s %7s",
                        policy.c_str(), knobs(config).c_str(), r.offeredRate, r.requestsPerS,
                        (unsigned long long)r.rejected, generative ? r.outputTokensPerS : r.inputTokensPerS,
                        ms(r.latency, 0.5), ms(r.latency, 0.9), ms(r.latency, 0.99), r.paddingEfficiency,
                        r.meanBatchSize,
                        ceilingAt ? (std::to_string(int(std::lround(fraction * 100))) + "%").c_str() : "-",
                        r.clean() ? "" : "OVERLD");
            if (generative)
                std::printf(" %9.1f %9.1f %9.2f %9.2f %6.1f", ms(r.ttft, 0.5), ms(r.ttft, 0.99),
                            ms(r.tpot, 0.5), ms(r.tpot, 0.99), 100 * r.prefixHitRate);
            if (slo.any())
                std::printf(" %8.2f %5.0f%%", r.goodputPerS, r.attainment * 100);
            std::printf("\n");
            std::fflush(stdout);

            nlohmann::json j = toJson(r);
            j["target_rate"] = rate;
            if (ceilingAt)
                j["fraction_of_ceiling"] = fraction;
            runs.push_back(j);
            const double p99 = ms(r.latency, 0.99);
            if (budgetMs > 0 && r.clean() && p99 <= budgetMs) {
                Best &b = best[policy];
                if (!b.any || throughput > b.throughput)
                    b = {rate, r.offeredRate, throughput, p99, true};
            }
            if (slo.any()) {
                BestGoodput &g = bestGoodput[policy];
                if (!g.any || r.goodputPerS > g.goodput) {
                    g.rate = rate;
                    g.offered = r.offeredRate;
                    g.goodput = r.goodputPerS;
                    g.attainment = r.attainment;
                    g.any = true;
                }
                if (r.attainment >= attainmentTarget && (!g.attained || r.offeredRate > g.attainedOffered)) {
                    g.attained = true;
                    g.attainedRate = rate;
                    g.attainedOffered = r.offeredRate;
                }
            }
        }
    }
    nlohmann::json summary = nlohmann::json::object();
    if (budgetMs > 0) {
        std::printf("\nbest throughput with p99 <= %.0f ms and nothing refused or left unfinished:\n",
                    budgetMs);
        const Best none = best.count("none") ? best["none"] : Best{};
        for (std::size_t ci = 0; ci < configs.size(); ++ci) {
            const std::string &policy = labels[ci];
            const Best b = best.count(policy) ? best[policy] : Best{};
            if (!b.any) {
                std::printf("  %-9s no tested rate met the budget\n", policy.c_str());
                summary[policy] = nullptr;
                continue;
            }
            const double gain = none.any && none.throughput > 0 ? b.throughput / none.throughput : 0;
            std::printf(
                "  %-9s %9.1f %s at offered %.1f req/s (rate asked %.1f; p99 %.1f ms)%s\n", policy.c_str(),
                b.throughput, generative ? "tok/s" : "req/s", b.offered, b.rate, b.p99,
                gain > 0 && policy != "none" ? (" = x" + std::to_string(gain).substr(0, 5) + " none").c_str()
                                             : "");
            summary[policy] = {{"rate", b.rate},
                               {"offered_rate", b.offered},
                               {"throughput", b.throughput},
                               {"p99_ms", b.p99},
                               {"vs_none", gain}};
        }
    }

    nlohmann::json goodputSummary = nlohmann::json::object();
    if (slo.any()) {
        std::printf("\nbest goodput at SLO %s over the rates tested (attainment target %.0f%%):\n",
                    describe(slo).c_str(), attainmentTarget * 100);
        auto of = [&](const std::string &name) {
            return bestGoodput.count(name) ? bestGoodput[name] : BestGoodput{};
        };
        const BestGoodput none = of("none"), dynamic = of("dynamic");
        for (std::size_t ci = 0; ci < configs.size(); ++ci) {
            const std::string &policy = labels[ci];
            if (goodputSummary.contains(policy))
                continue; // a label listed twice
            const BestGoodput g = of(policy);
            std::string vs;
            nlohmann::json j{{"rate", g.rate},
                             {"offered_rate", g.offered},
                             {"goodput", g.goodput},
                             {"slo_attainment", g.attainment}};
            if (none.goodput > 0 && policy != "none") {
                vs += " = x" + std::to_string(g.goodput / none.goodput).substr(0, 5) + " none";
                j["vs_none"] = g.goodput / none.goodput;
            }
            if (dynamic.goodput > 0 && policy != "dynamic") {
                vs += (vs.empty() ? " = x" : ", x") +
                      std::to_string(g.goodput / dynamic.goodput).substr(0, 5) + " dynamic";
                j["vs_dynamic"] = g.goodput / dynamic.goodput;
            }
            std::printf("  %-14s %8.2f req/s at offered %.1f req/s (rate asked %.1f; %.0f%% met it)%s",
                        policy.c_str(), g.goodput, g.offered, g.rate, g.attainment * 100, vs.c_str());
            if (g.attained) {
                std::printf("; >= %.0f%% up to offered %.1f req/s\n", attainmentTarget * 100,
                            g.attainedOffered);
                j["attained_offered_rate"] = g.attainedOffered;
            } else {
                std::printf("; no tested rate reached %.0f%%\n", attainmentTarget * 100);
                j["attained_offered_rate"] = nullptr;
            }
            goodputSummary[policy] = j;
        }
    }

    if (args.has("json")) {
        nlohmann::json j{{"stage", "load"},
                         {"model", model.name},
                         {"preset", spec.preset},
                         {"device", model.device},
                         {"parameters", model.parameters},
                         {"workload", setup.describe},
                         {"warmup_s", setup.warmupS},
                         {"window_s", setup.durationS},
                         {"runs", runs}};
        if (budgetMs > 0)
            j["p99_budget"] = {{"ms", budgetMs}, {"best", summary}};
        if (slo.any()) {
            auto bound = [](Duration d) {
                return d > Duration::zero() ? nlohmann::json(toSeconds(d) * 1e3) : nlohmann::json();
            };
            j["slo"] = {{"ttft_ms", bound(slo.ttft)},
                        {"tpot_ms", bound(slo.tpot)},
                        {"e2e_ms", bound(slo.e2e)},
                        {"attainment_target", attainmentTarget},
                        {"best_goodput", goodputSummary}};
        }
        if (ceilingAt)
            j["ceiling"] = {
                {"value", ceilingRate},
                {"unit", generative ? "output tokens/s" : "sequences/s"},
                {"batch", ceilingAt->batch},
                {"length", ceilingAt->length},
                {"definition", "the profile's best throughput over batch sizes at the workload's length"}};
        if (ceiling)
            j["ceiling_profile"] = toJson(*ceiling);
        if (int rc = writeJsonOption(args, j); rc != 0)
            return rc;
    }
    return 0;
}

} // namespace bp::bench
