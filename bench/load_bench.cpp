// batchpilot-bench load [model flags] [workload flags] [policy flags]
//   --compare none,static,dynamic,bucketed,continuous  [--rates R1,R2,.. --p99-budget-ms B]
//   [--slo ttft=500ms,tpot=50ms,e2e=2s]  (goodput columns and a goodput-at-SLO search over rates)
//   [--ceiling PROFILE.json | --no-ceiling] [--json FILE]
#include "load_bench.h"

#include "load_run.h"
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

namespace {

struct Setup {
    WorkloadSpec workload;
    double warmupS = 2, durationS = 10, drainS = 5;
    std::vector<double> rates;
    int typicalLength = 0;    // the ceiling's length: the mean input length (rounded up)
    int typicalNewTokens = 0; // generative
    std::string describe;
};

Setup workloadFromArgs(const Args &args, const ModelInfo &model)
{
    Setup s;
    WorkloadSpec &w = s.workload;
    w.vocabSize = std::min(model.vocabSize, 256);
    w.seed = std::uint64_t(args.num("workload-seed", 1));
    s.warmupS = args.num("warmup", 2);
    s.durationS = args.num("duration", 10);
    s.drainS = args.num("drain", 5);
    if (s.warmupS < 0 || s.durationS <= 0 || s.drainS < 0)
        throw std::invalid_argument("--warmup and --drain must be >= 0, --duration > 0");
    const bool generative = model.generative;
    w.maxNewTokens = generative ? int(args.num("max-new-tokens", 16)) : 0;
    // Default output cap: 256 tokens, at most half the decoder's positions.
    w.outputCap = int(args.num("output-cap", generative ? std::min(256, (model.maxSequenceLength + 1) / 2) : 0));
    if (generative && w.outputCap > 0)
        w.maxNewTokens = std::min(w.maxNewTokens, w.outputCap);
    // input + output must fit the decoder's positions (maxSequenceLength + 1)
    const int defaultCap = generative ? std::max(1, model.maxSequenceLength + 1 - std::max(w.outputCap, w.maxNewTokens))
                                      : model.maxSequenceLength;
    w.lengthCap = int(args.num("length-cap", defaultCap));
    if (w.lengthCap < 1 || (generative && w.lengthCap + std::max(w.outputCap, w.maxNewTokens) > model.maxSequenceLength + 1))
        throw std::invalid_argument("--length-cap " + std::to_string(w.lengthCap) + " plus " +
                                    std::to_string(std::max(w.outputCap, w.maxNewTokens)) +
                                    " new tokens does not fit the model's " +
                                    std::to_string(model.maxSequenceLength + (generative ? 1 : 0)) + " positions");

    if (args.has("trace")) {
        const std::string path = args.str("trace", "");
        auto parsed = parseTraceFile(path);
        if (!parsed)
            throw std::invalid_argument(parsed.status().message());
        w.trace = std::make_shared<const std::vector<TraceRow>>(std::move(parsed->rows));
        w.arrivals = ArrivalKind::Trace;
        w.lengths = LengthKind::Trace;
        w.timeScale = args.num("time-scale", 1);
        w.lengthScale = args.num("length-scale", 1);
        w.outputFromTrace = !(generative && args.has("max-new-tokens"));
        if (args.has("rate") || args.has("rates") || args.has("arrivals"))
            throw std::invalid_argument("--trace sets the arrivals; use --time-scale instead of --rate/--arrivals");
        double in = 0, out = 0;
        for (const auto &row : *w.trace) {
            in += std::min<double>(w.lengthCap, std::max(1.0, std::round(row.inputTokens * w.lengthScale)));
            out += std::max(1.0, std::round(row.outputTokens * w.lengthScale));
        }
        const double n = double(w.trace->size());
        s.typicalLength = int(std::ceil(in / n));
        s.typicalNewTokens = generative ? (w.outputFromTrace ? int(std::lround(out / n)) : w.maxNewTokens) : 0;
        if (generative && w.outputCap > 0)
            s.typicalNewTokens = std::min(s.typicalNewTokens, w.outputCap);
        // offered rate of the trace's first `warmup + duration` seconds
        std::size_t rows = 0;
        while (rows < w.trace->size() && (*w.trace)[rows].arrivalS / w.timeScale < s.warmupS + s.durationS)
            ++rows;
        w.limit = rows;
        s.rates = {double(rows) / (s.warmupS + s.durationS)};
        s.describe = "trace " + path + " (time x" + args.str("time-scale", "1") + ", lengths x" +
                     args.str("length-scale", "1") + ", " + std::to_string(rows) + " requests)";
        return s;
    }

    const std::string arrivals = args.str("arrivals", args.has("burstiness") ? "gamma" : "poisson");
    auto kind = parseArrivalKind(arrivals);
    if (!kind || *kind == ArrivalKind::Trace)
        throw std::invalid_argument("--arrivals expects poisson, gamma, constant or bursts (or use --trace FILE)");
    w.arrivals = *kind;
    w.burstiness = args.num("burstiness", 4);
    if (args.has("min-length") || args.has("max-length")) {
        w.lengths = LengthKind::Uniform;
        w.minLength = int(args.num("min-length", 8));
        w.maxLength = int(args.num("max-length", 128));
        s.typicalLength = (w.minLength + w.maxLength + 1) / 2;
    } else {
        w.lengths = LengthKind::Fixed;
        w.fixedLength = int(args.num("length", 64));
        s.typicalLength = w.fixedLength;
    }
    s.typicalLength = std::min(s.typicalLength, w.lengthCap > 0 ? w.lengthCap : s.typicalLength);
    s.typicalNewTokens = w.maxNewTokens;
    if (args.has("rates")) {
        for (const auto &item : args.list("rates", ""))
            s.rates.push_back(std::stod(item));
    } else {
        s.rates = {args.num("rate", 50)};
    }
    for (double r : s.rates)
        if (!(r > 0))
            throw std::invalid_argument("rates must be positive");
    s.describe = arrivals + (w.arrivals == ArrivalKind::Gamma ? " (CV² " + args.str("burstiness", "4") + ")" : "") +
                 ", " +
                 (w.lengths == LengthKind::Fixed ? "length " + std::to_string(w.fixedLength)
                                                 : "lengths " + std::to_string(w.minLength) + ".." +
                                                       std::to_string(w.maxLength)) +
                 (generative ? ", " + std::to_string(w.maxNewTokens) + " new tokens" : "");
    return s;
}

BatchingConfig baseConfig(const Args &args)
{
    BatchingConfig base;
    base.queueCapacity = 4096;
    if (args.has("config")) {
        auto loaded = loadConfigFile(args.str("config", ""));
        if (!loaded)
            throw std::invalid_argument(loaded.status().message());
        base = *loaded;
    }
    if (args.has("max-batch"))
        base.maxBatchSize = int(args.num("max-batch", 16));
    if (args.has("delay-us"))
        base.maxQueueDelay = std::chrono::microseconds(std::int64_t(args.num("delay-us", 5000)));
    if (args.has("buckets"))
        base.bucketEdges = parseIntList("buckets", args.list("buckets", ""));
    if (args.has("static-batch"))
        base.staticBatchSize = int(args.num("static-batch", 8));
    if (args.has("static-length"))
        base.staticPaddedLength = int(args.num("static-length", 128));
    if (args.has("instances"))
        base.instances = int(args.num("instances", 1));
    if (args.has("queue"))
        base.queueCapacity = int(args.num("queue", 4096));
    ContinuousConfig &cc = base.continuous;
    if (args.has("max-num-seqs"))
        cc.maxNumSeqs = int(args.num("max-num-seqs", 16));
    if (args.has("max-num-batched-tokens")) // a list: the first here, each in turn by expandTokenBudgets
        cc.maxNumBatchedTokens = parseIntList("max-num-batched-tokens", args.list("max-num-batched-tokens", "")).at(0);
    if (args.has("chunked-prefill"))
        cc.chunkedPrefill = args.num("chunked-prefill", 1) != 0;
    if (args.has("prefill-chunk"))
        cc.prefillChunk = int(args.num("prefill-chunk", 128));
    if (args.has("decode-first"))
        cc.decodeFirst = args.num("decode-first", 1) != 0;
    if (args.has("kv-cache-tokens"))
        cc.kvCacheTokens = int(args.num("kv-cache-tokens", 0));
    return base;
}

int batchLimit(const BatchingConfig &c)
{
    switch (c.policy) {
    case PolicyKind::None: return 1;
    case PolicyKind::Static: return c.staticBatchSize;
    case PolicyKind::Continuous: return c.continuous.maxNumSeqs;
    default: return c.maxBatchSize;
    }
}

std::string knobs(const BatchingConfig &c)
{
    switch (c.policy) {
    case PolicyKind::None: return "batch 1";
    case PolicyKind::Static:
        return "N=" + std::to_string(c.staticBatchSize) + " L=" + std::to_string(c.staticPaddedLength);
    case PolicyKind::Dynamic:
        return "max " + std::to_string(c.maxBatchSize) + ", " + formatDuration(c.maxQueueDelay);
    case PolicyKind::Bucketed: {
        std::string e;
        for (int edge : c.bucketEdges)
            e += (e.empty() ? "" : ",") + std::to_string(edge);
        return "max " + std::to_string(c.maxBatchSize) + ", " + formatDuration(c.maxQueueDelay) + ", " + e;
    }
    case PolicyKind::Continuous: {
        const ContinuousConfig &k = c.continuous;
        return "seqs " + std::to_string(k.maxNumSeqs) + ", tok " + std::to_string(k.maxNumBatchedTokens) +
               (k.chunkedPrefill ? ", chunk " + std::to_string(k.prefillChunk) : ", no chunk") +
               (k.kvCacheTokens > 0 ? ", kv " + std::to_string(k.kvCacheTokens) : "");
    }
    default: // policies added later: name their main knobs
        return "max " + std::to_string(c.maxBatchSize) + ", " + formatDuration(c.maxQueueDelay);
    }
}

} // namespace

const StageOptions &loadStage()
{
    static const StageOptions stage = [] {
        StageOptions s{"load", "[OPTIONS]",
                       "open-loop arrivals against each policy in turn (a fresh engine each)",
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
        s.options.insert(
            s.options.end(),
            {
                // workload
                {"arrivals", "KIND",
                 "poisson (default), gamma (the default with --burstiness), constant, bursts"},
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
                {"warmup", "S", "warm-up seconds (default 2)"},
                {"duration", "S", "measurement window in seconds (default 10)"},
                {"drain", "S", "seconds the window's requests may take to finish after it (default 5)"},
                // policies
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
                // reporting
                {"ceiling", "PROFILE.json",
                 "take the ceiling from a saved profile (default: measure it inline)"},
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
            });
        return s;
    }();
    return stage;
}

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
    if (args.has("slo")) {
        if (slo.tokenLevel() && !generative) {
            std::cerr << "batchpilot-bench load: --slo ttft/tpot need a generative model (" << model.name
                      << " generates no tokens); use e2e=\n";
            return 2;
        }
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
        for (std::size_t ti = 0; ti < (sweep ? tokenBudgets.size() : 1); ++ti) {
            BatchingConfig v = c;
            if (sweep)
                v.continuous.maxNumBatchedTokens = tokenBudgets[ti];
            if (Status s = validate(v); !s) {
                std::cerr << "batchpilot-bench load: " << s.toString() << "\n";
                return 2;
            }
            configs.push_back(v);
            labels.push_back(sweep ? label + "@" + std::to_string(tokenBudgets[ti]) : label);
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
                spec.name.rfind("builtin:", 0) == 0 ? (" preset " + spec.preset).c_str() : "", model.device.c_str(),
                double(model.parameters) / 1e6);
    std::printf("  workload: %s; warm-up %.1f s, window %.1f s, drain <= %.1f s; latency from scheduled arrival\n",
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
    std::printf("\n%-14s %-30s %8s %8s %6s %9s %10s %9s %9s %9s %6s %6s %7s", "policy", "knobs", "offered", "req/s",
                "rej", generative ? "out tok/s" : "in tok/s", "p50 ms", "p90 ms", "p99 ms", "pad eff", "batch",
                "ceil", "");
    if (generative)
        std::printf(" %9s %9s %9s %9s", "ttft p50", "ttft p99", "tpot p50", "tpot p99");
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
        double attainedRate = 0, attainedOffered = 0;              // highest rate meeting the attainment target
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
                std::cerr << "batchpilot-bench load: " << policy << ": " << result.status().toString() << "\n";
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
                std::printf(" %9.1f %9.1f %9.2f %9.2f", ms(r.ttft, 0.5), ms(r.ttft, 0.99), ms(r.tpot, 0.5),
                            ms(r.tpot, 0.99));
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
        std::printf("\nbest throughput with p99 <= %.0f ms and nothing refused or left unfinished:\n", budgetMs);
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
                vs += (vs.empty() ? " = x" : ", x") + std::to_string(g.goodput / dynamic.goodput).substr(0, 5) +
                      " dynamic";
                j["vs_dynamic"] = g.goodput / dynamic.goodput;
            }
            std::printf("  %-14s %8.2f req/s at offered %.1f req/s (rate asked %.1f; %.0f%% met it)%s", policy.c_str(),
                        g.goodput, g.offered, g.rate, g.attainment * 100, vs.c_str());
            if (g.attained) {
                std::printf("; >= %.0f%% up to offered %.1f req/s\n", attainmentTarget * 100, g.attainedOffered);
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
