// batchpilot-bench steps --model NAME [--device D] [--dtype T] [--threads N]
//   [--batches 1,4,16,64] [--context N] [--steps N] [--seed S] [--json FILE]
#include "steps_bench.h"

#include "model_profile.h"

#include "engine/sim/calibration/cost_model.h"
#include "engine/sim/calibration/statistics.h"
#include "engine/workload/seeded_tokens.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

namespace bp::bench {

const StageOptions &stepsStage()
{
    static const StageOptions stage = [] {
        StageOptions s{
            "steps", "[OPTIONS]",
            "decode steps over batch sizes: step time and, for an MoE model, the active experts",
            "For each batch size B: B sequences start with --context prompt tokens each (seeded random\n"
            "ids, one prefill step), then every sequence decodes one token per step: one untimed step,\n"
            "then --steps timed ones. Prints the median step, the time per token and, for a\n"
            "mixture-of-experts model (Qwen3MoeForCausalLM), the distinct experts each MoE layer ran\n"
            "per step (measured) beside E(1-(1-k/E)^B), what uniform routing expects; then the\n"
            "decode-step cost fitted to the timed steps: s0 + s2*T (+ s6*X for an MoE model, X the\n"
            "measured active experts), the cost model's iteration terms (docs/simulation.md).",
            modelOptions()};
        s.options.insert(
            s.options.end(),
            {
                {"batches", "B1,B2,..", "batch sizes (default 1,4,16,64)"},
                {"context", "N", "prompt tokens per sequence before the timed steps (default 16)"},
                {"steps", "N", "timed decode steps per batch size; the median is reported (default 5)"},
                {"json", "FILE", "write the figures as JSON"},
            });
        return s;
    }();
    return stage;
}

namespace {

// One batch size: `b` sequences prefilled with `context` tokens, then one
// untimed and `timedSteps` timed decode steps.
struct BatchRun {
    std::vector<double> times, experts; // per timed step; experts per MoE layer
    std::vector<CostObservation> observations;
    Status status;
};

BatchRun runBatch(Backend &model, StepModel &steps, int b, int context, int timedSteps, bool moe,
                  SeededTokens &tokens, std::uint64_t &nextId)
{
    const ModelInfo &info = model.info();
    BatchRun r;
    std::vector<std::uint64_t> ids;
    std::vector<StepItem> prefill;
    for (int i = 0; i < b; ++i) {
        ids.push_back(nextId++);
        StepItem item;
        item.sequence = ids.back();
        for (int t = 0; t < context; ++t)
            item.tokens.push_back(tokens.next());
        prefill.push_back(std::move(item));
    }
    std::vector<StepOutcome> out;
    Status s = steps.step(prefill, out);
    std::int64_t cached = context;
    for (int run = 0; s.isOk() && run <= timedSteps; ++run) {
        std::vector<StepItem> items(ids.size());
        StepShape shape;
        for (std::size_t i = 0; i < ids.size(); ++i) {
            items[i].sequence = ids[i];
            items[i].tokens = {tokens.next()};
            shape.add(cached, 1);
        }
        const std::int64_t before = moe ? model.expertsTouched() : 0;
        const auto start = std::chrono::steady_clock::now();
        s = steps.step(items, out);
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        for (const StepOutcome &o : out)
            if (s.isOk() && !o.status.isOk())
                s = o.status;
        ++cached;
        if (run == 0)
            continue; // warm-up
        r.times.push_back(took);
        // The decode-step terms a sweep separates: s0, s2·T and s6·X
        // (n = T for decodes; the context's A barely moves here).
        auto terms = CostModel::iterationTerms(shape, info.experts, info.expertsPerToken);
        terms[std::size_t(CostModel::kIterationStart) + 1] = 0;
        terms[std::size_t(CostModel::kIterationStart) + 3] = 0;
        CostObservation o{CostObservation::Kind::Iteration, terms, took};
        if (moe) {
            o.activeExperts = double(model.expertsTouched() - before) / double(info.moeLayers);
            o.terms[std::size_t(CostModel::kIterationStart) + 6] = o.activeExperts;
            r.experts.push_back(o.activeExperts);
        }
        r.observations.push_back(o);
    }
    for (std::uint64_t id : ids)
        steps.release(id);
    r.status = s;
    return r;
}

// The batch's row, printed and as JSON.
nlohmann::json printBatch(const ModelInfo &info, int b, const BatchRun &r, bool moe)
{
    const double step = median(r.times);
    nlohmann::json row = {{"batch", b}, {"step_s", step}, {"steps_s", r.times}};
    std::printf("  %6d  %10.2f  %12.3f", b, step * 1e3, step * 1e3 / b);
    if (moe) {
        double sum = 0;
        for (double x : r.experts)
            sum += x;
        const double measured = sum / double(r.experts.size()),
                     expected = CostModel::expectedActiveExperts(b, info.experts, info.expertsPerToken);
        std::printf("  %9.1f of %-4d  %16.1f", measured, info.experts, expected);
        row["active_experts"] = measured;
        row["uniform_routing"] = expected;
    }
    std::printf("\n");
    return row;
}

// The decode-step fit s0 + s2·T (+ s6·X), printed and as JSON.
nlohmann::json printFit(const std::vector<CostObservation> &observations, bool moe)
{
    auto fit = fitCostModel(observations, true);
    if (!fit) {
        std::printf("\n  no fit: %s\n", fit.status().message().c_str());
        return nullptr;
    }
    const auto &k = fit->model.coef;
    const std::size_t i = std::size_t(CostModel::kIterationStart);
    std::printf("\n  fitted decode step = %.4g + %.4g*T", k[i] * 1e3, k[i + 2] * 1e3);
    if (moe)
        std::printf(" + %.4g*X", k[i + 6] * 1e3);
    std::printf("  (ms; T tokens%s)\n", moe ? ", X active experts per MoE layer" : "");
    std::printf("  fit error over %zu steps: median %.1f%%, worst %.1f%%\n", fit->error.observations,
                100 * fit->error.medianRel, 100 * fit->error.maxRel);
    return {{"s0_s", k[i]},
            {"s2_s_per_token", k[i + 2]},
            {"s6_s_per_active_expert", k[i + 6]},
            {"error", toJson(fit->error)}};
}

void printHeader(const ModelInfo &info, int context, int timedSteps, bool moe)
{
    std::printf("batchpilot-bench steps  %s\n  %s\n", info.name.c_str(), info.description.c_str());
    if (moe)
        std::printf("  %d MoE layers of %d experts, top %d\n", info.moeLayers, info.experts,
                    info.expertsPerToken);
    std::printf("  context %d tokens, 1 untimed + %d timed decode steps per batch size (median)\n", context,
                timedSteps);
    std::printf("\n  %6s  %10s  %12s", "batch", "step ms", "ms / token");
    if (moe)
        std::printf("  %16s  %16s", "active experts", "uniform routing");
    std::printf("\n");
}

} // namespace

int runStepsBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, stepsStage()); rc >= 0)
        return rc;
    const ModelSpec spec = modelSpecFromArgs(args);
    const std::vector<int> batches = parseIntList("batches", args.list("batches", "1,4,16,64"));
    const int context = int(args.num("context", 16)), timedSteps = int(args.num("steps", 5));
    if (context < 1 || timedSteps < 1 || batches.empty()) {
        std::cerr << "batchpilot-bench steps: --context and --steps must be >= 1, --batches not empty\n";
        return 2;
    }
    if (*std::min_element(batches.begin(), batches.end()) < 1) {
        std::cerr << "batchpilot-bench steps: batch sizes must be >= 1\n";
        return 2;
    }
    auto backend = createBackend(spec);
    if (!backend) {
        std::cerr << "batchpilot-bench steps: " << backend.status().toString() << "\n";
        return 1;
    }
    Backend &model = **backend;
    const ModelInfo &info = model.info();
    StepModel *steps = model.steps();
    if (!steps || !info.generative) {
        std::cerr << "batchpilot-bench steps: " << info.name << " has no step-level generation\n";
        return 1;
    }
    const int largest = *std::max_element(batches.begin(), batches.end());
    if (context + timedSteps + 2 > info.maxSequenceLength) {
        std::cerr << "batchpilot-bench steps: --context + --steps exceed the model's "
                  << info.maxSequenceLength << " positions\n";
        return 2;
    }
    const int perSequence = context + timedSteps + 2;
    if (Status s = model.prepareKv({std::int64_t(largest) * (perSequence + 16), 0.9, 16, largest}); !s) {
        std::cerr << "batchpilot-bench steps: " << s.toString() << "\n";
        return 1;
    }
    const bool moe = info.experts > 0 && info.moeLayers > 0 && model.expertsTouched() >= 0;
    SeededTokens tokens(spec.seed, info.vocabSize);
    printHeader(info, context, timedSteps, moe);
    std::vector<CostObservation> observations;
    nlohmann::json rows = nlohmann::json::array();
    std::uint64_t nextId = 1;
    for (int b : batches) {
        BatchRun r = runBatch(model, *steps, b, context, timedSteps, moe, tokens, nextId);
        if (!r.status) {
            std::cerr << "batchpilot-bench steps: batch " << b << ": " << r.status.toString() << "\n";
            return 1;
        }
        rows.push_back(printBatch(info, b, r, moe));
        observations.insert(observations.end(), r.observations.begin(), r.observations.end());
    }
    const nlohmann::json fitJson = printFit(observations, moe);
    if (!args.has("json"))
        return 0;
    return writeJsonOption(args, {{"model", info.name},
                                  {"description", info.description},
                                  {"context", context},
                                  {"steps", timedSteps},
                                  {"experts", info.experts},
                                  {"experts_per_token", info.expertsPerToken},
                                  {"moe_layers", info.moeLayers},
                                  {"rows", rows},
                                  {"fit", fitJson}});
}

} // namespace bp::bench
