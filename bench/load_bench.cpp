// batchpilot-bench load [model flags] [workload flags] [policy flags]
//   --compare none,static,dynamic,bucketed,continuous  [--rates R1,R2,.. --p99-budget-ms B]
//   [--slo ttft=500ms,tpot=50ms,e2e=2s]  (goodput columns and a goodput-at-SLO search over rates)
//   [--ceiling PROFILE.json | --no-ceiling] [--json FILE]
// The flags are parsed (load_setup.h, load_sweep.h), the sweep runs
// (load_sweep.h), the printer prints each run as it finishes and the
// summaries after (load_print.h), and --json stores the whole document.
#include "load_bench.h"

#include "load_print.h"
#include "load_sweep.h"

namespace bp::bench {

namespace {

const char *const kPrefix = "batchpilot-bench load: ";

// --slo, refused before any model is loaded when malformed.
StageResult<Slo> sloFromArgs(const Args &args)
{
    if (!args.has("slo"))
        return Slo{};
    auto parsed = parseSlo(args.str("slo", ""));
    if (!parsed)
        return StageError{2, kPrefix + parsed.status().message()};
    return *parsed;
}

StageResult<std::shared_ptr<Backend>> loadBackend(const ModelSpec &spec)
{
    auto created = createBackend(spec);
    if (!created)
        return StageError{1, kPrefix + created.status().toString()};
    return std::shared_ptr<Backend>(std::move(created.value()));
}

// --slo-attainment, and an SLO the model can be held to.
StageResult<double> attainmentFromArgs(const Args &args, const Slo &slo, const ModelInfo &model)
{
    if (slo.tokenLevel() && !model.generative)
        return StageError{2, kPrefix + ("--slo ttft/tpot need a generative model (" + model.name +
                                        " generates no tokens); use e2e=")};
    const double target = args.num("slo-attainment", 0.9);
    if (!(target > 0 && target <= 1))
        return StageError{2, kPrefix + std::string("--slo-attainment must be in (0, 1]")};
    return target;
}

} // namespace

int runLoadBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, loadStage()); rc >= 0)
        return rc;
    const auto slo = sloFromArgs(args);
    if (!slo)
        return report(slo.error());
    const ModelSpec spec = modelSpecFromArgs(args);
    const auto backend = loadBackend(spec);
    if (!backend)
        return report(backend.error());
    const ModelInfo &model = (*backend)->info();
    const Setup setup = workloadFromArgs(args, model);
    const auto attainmentTarget = attainmentFromArgs(args, *slo, model);
    if (!attainmentTarget)
        return report(attainmentTarget.error());
    const auto policies = policiesFromArgs(args);
    if (!policies)
        return report(policies.error());
    const auto ceiling = ceilingFromArgs(args, **backend, spec, setup, *policies);
    if (!ceiling)
        return report(ceiling.error());

    const LoadReport rep{model, spec, setup, *slo, *attainmentTarget, *policies, *ceiling};
    printLoadHeader(rep);
    const double budgetMs = args.num("p99-budget-ms", 0);
    const auto runs = runLoadSweep(*backend, *policies, setup, *slo,
                                   [&](const LoadSweepRun &run) { printLoadRow(rep, run); });
    if (!runs)
        return report(runs.error());
    const nlohmann::json budget =
        budgetMs > 0 ? printBudgetSummary(rep, *runs, budgetMs) : nlohmann::json::object();
    const nlohmann::json goodput = slo->any() ? printGoodputSummary(rep, *runs) : nlohmann::json::object();
    return args.has("json") ? writeJsonOption(args, loadJson(rep, *runs, budgetMs, budget, goodput)) : 0;
}

} // namespace bp::bench
