// The printer of `batchpilot-bench load` (load_bench.h): the header, a row
// per run as it finishes, the summaries, and the --json document.
#pragma once

#include "load_sweep.h"

#include <nlohmann/json.hpp>

namespace bp::bench {

// What the sweep ran, as the header and the JSON describe it.
struct LoadReport {
    const ModelInfo &model;
    const ModelSpec &spec;
    const Setup &setup;
    const Slo &slo;
    double attainmentTarget = 0.9; // with an SLO
    const std::vector<LoadPolicy> &policies;
    const LoadCeiling &ceiling;
};

// The model, the workload, the counting rule, the SLO, the ceiling and the
// table's column heads.
void printLoadHeader(const LoadReport &report);
// One table row; flushed, so a long sweep shows its progress.
void printLoadRow(const LoadReport &report, const LoadSweepRun &run);
// Each policy's best throughput with p99 within the budget; the "best"
// object of the JSON's p99_budget.
nlohmann::json printBudgetSummary(const LoadReport &report, const std::vector<LoadSweepRun> &runs,
                                  double budgetMs);
// Each policy's best goodput and where it met the attainment target; the
// JSON's slo.best_goodput.
nlohmann::json printGoodputSummary(const LoadReport &report, const std::vector<LoadSweepRun> &runs);
// The whole --json document. budgetMs > 0: with the budget summary; an SLO:
// with the goodput summary.
nlohmann::json loadJson(const LoadReport &report, const std::vector<LoadSweepRun> &runs, double budgetMs,
                        const nlohmann::json &budgetSummary, const nlohmann::json &goodputSummary);

} // namespace bp::bench
