#include "load_print.h"

#include <cmath>
#include <cstdio>
#include <string>

namespace bp::bench {

namespace {

double ms(const LatencyHistogram &h, double q)
{
    return double(h.quantile(q)) / 1e6;
}

// "x1.234" of a ratio, as the summaries print it.
std::string times(double ratio)
{
    return "x" + std::to_string(ratio).substr(0, 5);
}

} // namespace

void printLoadHeader(const LoadReport &rep)
{
    const ModelInfo &model = rep.model;
    const Setup &setup = rep.setup;
    const bool generative = model.generative;
    std::printf("batchpilot-bench load  model %s%s on %s (%.2f M parameters)\n", model.name.c_str(),
                rep.spec.name.rfind("builtin:", 0) == 0 ? (" preset " + rep.spec.preset).c_str() : "",
                model.device.c_str(), double(model.parameters) / 1e6);
    std::printf(
        "  workload: %s; warm-up %.1f s, window %.1f s, drain <= %.1f s; latency from scheduled arrival\n",
        setup.describe.c_str(), setup.warmupS, setup.durationS, setup.drainS);
    std::printf(
        "  counted: the requests that arrived in the window (throughput = those completed OK / window)\n");
    if (rep.slo.any())
        std::printf("  SLO: %s; goodput = the window's arrivals that completed OK within it / window\n",
                    describe(rep.slo).c_str());
    if (const auto &cell = rep.ceiling.cell)
        std::printf("  ceiling: %.1f %s = the profile's best, at batch %d x length %d (%s); ceil = "
                    "throughput / ceiling\n",
                    rep.ceiling.rate, generative ? "output tok/s" : "req/s", cell->batch, cell->length,
                    rep.ceiling.source.c_str());
    std::printf("\n%-14s %-30s %8s %8s %6s %9s %10s %9s %9s %9s %6s %6s %7s", "policy", "knobs", "offered",
                "req/s", "rej", generative ? "out tok/s" : "in tok/s", "p50 ms", "p90 ms", "p99 ms",
                "pad eff", "batch", "ceil", "");
    if (generative)
        std::printf(" %9s %9s %9s %9s %6s", "ttft p50", "ttft p99", "tpot p50", "tpot p99", "hit%");
    if (rep.slo.any())
        std::printf(" %8s %6s", "goodput", "slo%");
    std::printf("\n");
}

void printLoadRow(const LoadReport &rep, const LoadSweepRun &run)
{
    const LoadRunResult &r = run.result;
    const bool generative = rep.model.generative;
    const double ceilingRate = rep.ceiling.rate;
    const double fraction = ceilingRate > 0 ? throughputOf(r, generative) / ceilingRate : 0;
    std::printf("%-14s %-30s %8.1f %8.1f %6llu %9.1f %10.1f %9.1f %9.1f %9.3f %6.1f %6s %7s",
                rep.policies[run.policy].label.c_str(), knobs(r.config).c_str(), r.offeredRate,
                r.requestsPerS, (unsigned long long)r.rejected,
                generative ? r.outputTokensPerS : r.inputTokensPerS, ms(r.latency, 0.5), ms(r.latency, 0.9),
                ms(r.latency, 0.99), r.paddingEfficiency, r.meanBatchSize,
                rep.ceiling.cell ? (std::to_string(int(std::lround(fraction * 100))) + "%").c_str() : "-",
                r.clean() ? "" : "OVERLD");
    if (generative)
        std::printf(" %9.1f %9.1f %9.2f %9.2f %6.1f", ms(r.ttft, 0.5), ms(r.ttft, 0.99), ms(r.tpot, 0.5),
                    ms(r.tpot, 0.99), 100 * r.prefixHitRate);
    if (rep.slo.any())
        std::printf(" %8.2f %5.0f%%", r.goodputPerS, r.attainment * 100);
    std::printf("\n");
    std::fflush(stdout);
}

nlohmann::json printBudgetSummary(const LoadReport &rep, const std::vector<LoadSweepRun> &runs,
                                  double budgetMs)
{
    const bool generative = rep.model.generative;
    const auto best = bestUnderBudget(runs, rep.policies, generative, budgetMs);
    auto of = [&](const std::string &label) {
        return best.count(label) ? best.at(label) : BestUnderBudget{};
    };
    nlohmann::json summary = nlohmann::json::object();
    std::printf("\nbest throughput with p99 <= %.0f ms and nothing refused or left unfinished:\n", budgetMs);
    const BestUnderBudget none = of("none");
    for (const LoadPolicy &p : rep.policies) {
        const std::string &policy = p.label;
        const BestUnderBudget b = of(policy);
        if (!b.any) {
            std::printf("  %-9s no tested rate met the budget\n", policy.c_str());
            summary[policy] = nullptr;
            continue;
        }
        const double gain = none.any && none.throughput > 0 ? b.throughput / none.throughput : 0;
        std::printf("  %-9s %9.1f %s at offered %.1f req/s (rate asked %.1f; p99 %.1f ms)%s\n",
                    policy.c_str(), b.throughput, generative ? "tok/s" : "req/s", b.offered, b.rate, b.p99,
                    gain > 0 && policy != "none" ? (" = " + times(gain) + " none").c_str() : "");
        summary[policy] = {{"rate", b.rate},
                           {"offered_rate", b.offered},
                           {"throughput", b.throughput},
                           {"p99_ms", b.p99},
                           {"vs_none", gain}};
    }
    return summary;
}

nlohmann::json printGoodputSummary(const LoadReport &rep, const std::vector<LoadSweepRun> &runs)
{
    const double target = rep.attainmentTarget;
    const auto best = bestGoodput(runs, rep.policies, target);
    auto of = [&](const std::string &label) { return best.count(label) ? best.at(label) : BestGoodput{}; };
    nlohmann::json summary = nlohmann::json::object();
    std::printf("\nbest goodput at SLO %s over the rates tested (attainment target %.0f%%):\n",
                describe(rep.slo).c_str(), target * 100);
    const BestGoodput none = of("none"), dynamic = of("dynamic");
    for (const LoadPolicy &p : rep.policies) {
        const std::string &policy = p.label;
        if (summary.contains(policy))
            continue; // a label listed twice
        const BestGoodput g = of(policy);
        std::string vs;
        nlohmann::json j{{"rate", g.rate},
                         {"offered_rate", g.offered},
                         {"goodput", g.goodput},
                         {"slo_attainment", g.attainment}};
        if (none.goodput > 0 && policy != "none") {
            vs += " = " + times(g.goodput / none.goodput) + " none";
            j["vs_none"] = g.goodput / none.goodput;
        }
        if (dynamic.goodput > 0 && policy != "dynamic") {
            vs += (vs.empty() ? " = " : ", ") + times(g.goodput / dynamic.goodput) + " dynamic";
            j["vs_dynamic"] = g.goodput / dynamic.goodput;
        }
        std::printf("  %-14s %8.2f req/s at offered %.1f req/s (rate asked %.1f; %.0f%% met it)%s",
                    policy.c_str(), g.goodput, g.offered, g.rate, g.attainment * 100, vs.c_str());
        if (g.attained) {
            std::printf("; >= %.0f%% up to offered %.1f req/s\n", target * 100, g.attainedOffered);
            j["attained_offered_rate"] = g.attainedOffered;
        } else {
            std::printf("; no tested rate reached %.0f%%\n", target * 100);
            j["attained_offered_rate"] = nullptr;
        }
        summary[policy] = j;
    }
    return summary;
}

nlohmann::json loadJson(const LoadReport &rep, const std::vector<LoadSweepRun> &runs, double budgetMs,
                        const nlohmann::json &budgetSummary, const nlohmann::json &goodputSummary)
{
    const bool generative = rep.model.generative;
    const LoadCeiling &ceiling = rep.ceiling;
    nlohmann::json runJson = nlohmann::json::array();
    for (const LoadSweepRun &run : runs) {
        nlohmann::json j = toJson(run.result);
        j["target_rate"] = run.rate;
        if (ceiling.cell)
            j["fraction_of_ceiling"] =
                ceiling.rate > 0 ? throughputOf(run.result, generative) / ceiling.rate : 0;
        runJson.push_back(j);
    }
    nlohmann::json j{{"stage", "load"},
                     {"model", rep.model.name},
                     {"preset", rep.spec.preset},
                     {"device", rep.model.device},
                     {"parameters", rep.model.parameters},
                     {"workload", rep.setup.describe},
                     {"warmup_s", rep.setup.warmupS},
                     {"window_s", rep.setup.durationS},
                     {"runs", runJson}};
    if (budgetMs > 0)
        j["p99_budget"] = {{"ms", budgetMs}, {"best", budgetSummary}};
    if (rep.slo.any()) {
        auto bound = [](Duration d) {
            return d > Duration::zero() ? nlohmann::json(toSeconds(d) * 1e3) : nlohmann::json();
        };
        j["slo"] = {{"ttft_ms", bound(rep.slo.ttft)},
                    {"tpot_ms", bound(rep.slo.tpot)},
                    {"e2e_ms", bound(rep.slo.e2e)},
                    {"attainment_target", rep.attainmentTarget},
                    {"best_goodput", goodputSummary}};
    }
    if (ceiling.cell)
        j["ceiling"] = {
            {"value", ceiling.rate},
            {"unit", generative ? "output tokens/s" : "sequences/s"},
            {"batch", ceiling.cell->batch},
            {"length", ceiling.cell->length},
            {"definition", "the profile's best throughput over batch sizes at the workload's length"}};
    if (ceiling.profile)
        j["ceiling_profile"] = toJson(*ceiling.profile);
    return j;
}

} // namespace bp::bench
