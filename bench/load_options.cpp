// The load stage's flags and their help (batchpilot-bench load --help).
#include "load_bench.h"

#include "load_setup.h"
#include "model_profile.h"

namespace bp::bench {

namespace {

// The arrivals, the lengths and the timeline.
const std::vector<OptionHelp> &workloadOptions()
{
    static const std::vector<OptionHelp> options = {
        {"arrivals", "KIND", "poisson (default), gamma (the default with --burstiness), constant, bursts"},
        {"rate", "R", "offered requests/s (default 50)"},
        {"rates", "R1,R2,..", "several offered rates, one run each"},
        {"rates-none", "R1,..", "rates for policy none only (overrides --rates)"},
        {"rates-static", "R1,..", "rates for policy static only"},
        {"rates-dynamic", "R1,..", "rates for policy dynamic only"},
        {"rates-bucketed", "R1,..", "rates for policy bucketed only"},
        {"rates-continuous", "R1,..", "rates for policy continuous only"},
        {"burstiness", "CV2", "gamma arrivals: squared coefficient of variation (default 4)"},
        {"length", "L", "tokens per request (default 64)"},
        {"min-length", "N", "uniform lengths from N (default 8) ..."},
        {"max-length", "N", "... to N tokens (default 128)"},
        {"max-new-tokens", "N", "decoders: tokens generated per request (default 16)"},
        {"trace", "FILE.csv", "arrivals and lengths from a trace (Azure or plain CSV)"},
        {"time-scale", "X", "trace: play X times faster (default 1)"},
        {"length-scale", "X", "trace: multiply token counts by X (default 1)"},
        {"length-cap", "N", "cap input lengths (default: what the model's positions allow)"},
        {"output-cap", "N", "decoders: cap output lengths (default 256, at most half the positions)"},
        {"workload-seed", "S", "seed of arrivals, lengths and tokens (default 1)"},
        {"system-prompt", "N", "a shared system prompt of N tokens in front of prompts (default 0)"},
        {"system-prompt-share", "F", "the fraction of prompts with it (default 1)"},
        {"warmup", "S", "warm-up seconds (default 2)"},
        {"duration", "S", "measurement window in seconds (default 10)"},
        {"drain", "S", "seconds the window's requests may take to finish after it (default 5)"},
    };
    return options;
}

// The policies compared and their knobs.
const std::vector<OptionHelp> &policyOptions()
{
    static const std::vector<OptionHelp> options = {
        {"compare", "P1,P2,..",
         "policies (none, static, dynamic, bucketed, continuous, ...) or FILE.json configs (default "
         "dynamic)"},
        {"config", "FILE.json", "the base batching config"},
        {"max-batch", "N", "max batch size"},
        {"delay-us", "U", "max queue delay in microseconds"},
        {"buckets", "E1,E2,..", "bucket edges in tokens (bucketed)"},
        {"static-batch", "N", "static policy: batch size"},
        {"static-length", "L", "static policy: padded length"},
        {"instances", "N", "executor instances"},
        {"queue", "N", "admission queue capacity (default 4096)"},
        {"max-num-seqs", "N", "continuous: running sequences (default 16)"},
        {"max-num-batched-tokens", "T1,T2,..",
         "continuous: token budget per step (default 512); several: one continuous run each"},
        {"chunked-prefill", "0|1", "continuous: feed long prompts in chunks (default 1)"},
        {"prefill-chunk", "N", "continuous: tokens per prefill chunk (default 128)"},
        {"decode-first", "0|1", "continuous: decodes take the budget first (default 1)"},
        {"kv-cache-tokens", "N", "continuous: KV budget in tokens, 0 = unlimited (default 0)"},
        {"prefix-cache", "0|1|0,1",
         "continuous: the KV prefix cache off (default), on, or both (a run each)"},
        {"prefix-block", "N", "continuous: prefix-cache block in tokens (default 16)"},
    };
    return options;
}

// The ceiling, the summaries and --json.
const std::vector<OptionHelp> &reportOptions()
{
    static const std::vector<OptionHelp> options = {
        {"ceiling", "PROFILE.json", "take the ceiling from a saved profile (default: measure it inline)"},
        {"no-ceiling", "", "skip the ceiling"},
        {"p99-budget-ms", "B", "summarize each policy's best throughput with p99 <= B ms"},
        {"slo", "ttft=T,tpot=T,e2e=T",
         "goodput: req/s of the window's arrivals that completed OK within every given bound "
         "(any subset; units us, ms, s; e.g. ttft=500ms,tpot=50ms); adds goodput columns and, "
         "per policy, its best goodput over the rates tested"},
        {"slo-attainment", "A",
         "with --slo: also name each policy's highest rate at which a fraction >= A of the "
         "window's arrivals met the SLO (DistServe's rule; default 0.9)"},
        {"json", "FILE", "write every run as JSON"},
    };
    return options;
}

} // namespace

const StageOptions &loadStage()
{
    static const StageOptions stage = [] {
        StageOptions s{
            "load", "[OPTIONS]", "open-loop arrivals against each policy in turn (a fresh engine each)",
            "Timeline per run: --warmup seconds of arrivals (run, not measured), the --duration "
            "window, then up\n"
            "to --drain seconds for the window's requests to finish. Every figure is taken over "
            "the requests\n"
            "that ARRIVED in the window: throughput = those completed / window length, latency "
            "from each one's\n"
            "scheduled arrival. ceil = throughput / the ceiling, the profile's best throughput "
            "over batch sizes\n"
            "at the workload's mean input length (one figure for every policy).\n"
            "Decoders: TTFT from the scheduled arrival to the first token, TPOT = (last - first) / "
            "(tokens - 1).\n"
            "With --slo: goodput = the window's arrivals that completed OK and met every given "
            "bound / window\n"
            "length (vLLM, DistServe); slo% = those / the window's arrivals.",
            modelOptions()};
        for (const auto *group :
             {&workloadOptions(), &policyOptions(), &reportOptions(), &conversationOptions()})
            s.options.insert(s.options.end(), group->begin(), group->end());
        return s;
    }();
    return stage;
}

} // namespace bp::bench
