// batchpilot-bench fidelity: the flags are parsed, the run (fidelity_run.h)
// reports the calibration, each real replay (stderr) and each row of the
// table to the printer as it goes, then the printer adds the summary and
// --json stores the whole table.
#include "fidelity_bench.h"

#include "fidelity_run.h"
#include "model_profile.h"

#include "engine/sim/calibration/statistics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <unistd.h>

namespace bp::bench {

const StageOptions &fidelityStage()
{
    static const StageOptions stage = [] {
        StageOptions s{
            "fidelity", "[OPTIONS]", "simulated vs real replays of two traces under 8 configs: the error",
            "Profiles the model (a quick calibration grid), then replays two short traces -- a window\n"
            "of the Azure conversation trace re-timed to --seconds, and a synthetic on/off bursty\n"
            "trace -- for real and simulated under 8 configs (every request-level policy, batch\n"
            "sizes, delays, 2 instances, adaptive delay) and prints the relative error of the\n"
            "simulation in throughput, latency p50 and p99 (and TTFT for a decoder) per config,\n"
            "with the median absolute error and the worst case.",
            modelOptions()};
        s.options.insert(
            s.options.end(),
            {
                {"azure", "FILE.csv", "the Azure trace (default resources/traces/azure_llm_conv_2023.csv)"},
                {"seconds", "S", "real time of each replay (default 3)"},
                {"load", "F",
                 "offered load as a fraction of batch-1 capacity (default 0.3: carried, not saturated)"},
                {"length-scale", "X", "multiply the Azure token counts (default 0.125)"},
                {"configs", "N",
                 "run only the first N configs (default all: 8, 10 for a decoder with steps)"},
                {"calibrate", "profile|sessions",
                 "the table's calibration: the profile alone, or the profile plus the batch rows of the "
                 "other configs' real runs of the same trace (leave-one-out; default)"},
                {"repeat-real", "",
                 "replay every config for real twice and print the error of the second run against the first "
                 "(the noise floor of the machine)"},
                {"noise", "none|mean|drawn",
                 "the table's cost noise: the prediction, x the mean residual, or x a residual drawn "
                 "(seeded; default)"},
                {"full-grid", "", "calibrate with the full grid instead of the quick one"},
                {"prefix", "",
                 "one prefix-heavy trace instead (a shared system prompt, then 16-48 own tokens) under "
                 "continuous "
                 "with the KV prefix cache off, on, and on under a KV budget; prints the hit rates too"},
                {"system-prompt", "N", "--prefix: the shared system prompt's tokens (default 128)"},
                {"db", "FILE", "keep the sessions in this trace database (default: a temporary one)"},
                {"json", "FILE", "write the table as JSON"},
            });
        return s;
    }();
    return stage;
}

namespace {

StageResult<FidelityOptions> parseFidelity(const Args &args)
{
    FidelityOptions o;
    o.spec = modelSpecFromArgs(args, "builtin:tiny-encoder");
    o.seconds = args.num("seconds", 3);
    o.load = args.num("load", 0.3);
    o.lengthScale = args.num("length-scale", 0.125);
    o.azurePath = args.str("azure", "resources/traces/azure_llm_conv_2023.csv");
    o.calibrationMode = args.str("calibrate", "sessions");
    o.noiseName = args.str("noise", "drawn");
    if (!(o.seconds > 0) || !(o.load > 0) || !(o.lengthScale > 0))
        return StageError{2, "fidelity: --seconds, --load and --length-scale must be positive"};
    if (args.has("configs"))
        o.configs = std::size_t(std::max(1.0, args.num("configs", 20)));
    o.fullGrid = args.has("full-grid");
    o.repeatReal = args.has("repeat-real");
    o.prefix = args.has("prefix");
    if (o.prefix)
        o.systemPrompt = int(args.num("system-prompt", 128));
    o.temporaryDb = !args.has("db");
    o.dbPath = args.str("db", (std::filesystem::temp_directory_path() /
                               ("bp-fidelity-" + std::to_string(::getpid()) + ".sqlite"))
                                  .string());
    return o;
}

// The table as the run reports it: stdout, flushed row by row; the real
// replays on stderr.
class FidelityPrinter final : public FidelityObserver {
public:
    void calibrated(const Calibration &cal, double seconds) override
    {
        std::printf("calibration: %s, %zu measurements in %.1f s; fit error median %.1f%%, worst %.1f%%; "
                    "2 executors at once: x%.2f\n",
                    cal.describe().c_str(), cal.observations, seconds, 100 * cal.error.medianRel,
                    100 * cal.error.maxRel, cal.cost.slowdownAt(2));
    }
    void realReplayed(const std::string &trace, const std::string &config) override
    {
        std::fprintf(stderr, "fidelity: %s / %s replayed (load average %.1f)\n", trace.c_str(),
                     config.c_str(), loadAverage());
    }
    void tableStarted(bool generative) override
    {
        std::printf("\n%-7s %-20s %9s %9s %7s %9s %9s %7s %9s %9s %7s%s\n", "trace", "config", "real rps",
                    "sim rps", "err", "real p50", "sim p50", "err", "real p99", "sim p99", "err",
                    generative ? "  ttft p50 real/sim (err)  tpot p50 real/sim (err)" : "");
    }
    void rowFinished(const FidelityRow &row, bool generative, bool prefix) override
    {
        const SessionSummary &a = row.real, &b = row.sim;
        const TokenFigures &ra = row.realTokens, &sb = row.simTokens;
        std::string tokenText;
        if (generative) {
            char buf[160];
            std::snprintf(buf, sizeof buf, "  %7.2f/%7.2f (%+5.0f%%)  %6.2f/%6.2f (%+5.0f%%)", ra.ttftP50,
                          sb.ttftP50, 100 * relError(sb.ttftP50, ra.ttftP50), ra.tpotP50, sb.tpotP50,
                          100 * relError(sb.tpotP50, ra.tpotP50));
            tokenText = buf;
        }
        std::printf("%-7s %-20s %9.1f %9.1f %+6.0f%% %9.2f %9.2f %+6.0f%% %9.2f %9.2f %+6.0f%%%s\n",
                    row.trace.c_str(), row.config.c_str(), a.throughputRps, b.throughputRps,
                    100 * row.errors[0].second, a.latencyP50Ms, b.latencyP50Ms, 100 * row.errors[1].second,
                    a.latencyP99Ms, b.latencyP99Ms, 100 * row.errors[2].second, tokenText.c_str());
        if (prefix)
            std::printf("%-7s %-20s prefix hit rate real %.1f%%, simulated %.1f%% (%+.1f points)\n", "", "",
                        100 * a.prefixCacheHitRate, 100 * b.prefixCacheHitRate,
                        100 * (b.prefixCacheHitRate - a.prefixCacheHitRate));
        std::fflush(stdout);
    }
};

double worstOf(const std::vector<double> &v)
{
    return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
}

// After the table: the error over every figure, the machine's load, the
// noise floor, and every calibration / cost noise against the same runs.
void printSummary(const FidelityOptions &o, const FidelityResult &r)
{
    std::printf("\nmedian absolute error %.1f%% over %zu figures; worst %.1f%% (%s)\n",
                100 * median(r.errors), r.errors.size(), 100 * r.worstValue, r.worstWhere.c_str());
    std::printf("load average during the real replays: median %.1f, highest %.1f (%u cores)\n",
                median(r.loads), worstOf(r.loads), std::thread::hardware_concurrency());
    if (!r.floorErrors.empty())
        std::printf(
            "noise floor: each config replayed for real twice, the second vs the first: median |error| "
            "%.1f%% over %zu figures, worst %.1f%%\n",
            100 * median(r.floorErrors), r.floorErrors.size(), 100 * worstOf(r.floorErrors));
    std::printf("\nthe same real runs under every calibration / cost noise (median |error|, worst):\n");
    const std::string chosen = o.calibrationMode + "/" + o.noiseName;
    for (const FidelityMode &m : r.modes)
        std::printf("  %-16s %6.1f%%  %6.1f%%%s\n", m.name().c_str(), 100 * median(m.errors),
                    100 * worstOf(m.errors), m.name() == chosen ? "  (the table)" : "");
}

nlohmann::json rowJson(const FidelityRow &row)
{
    auto side = [](std::int64_t session, const SessionSummary &s, const TokenFigures &t) {
        return nlohmann::json{{"session", session},
                              {"throughput_rps", s.throughputRps},
                              {"p50_ms", s.latencyP50Ms},
                              {"p99_ms", s.latencyP99Ms},
                              {"ttft_p50_ms", t.ttftP50},
                              {"tpot_p50_ms", t.tpotP50},
                              {"mean_batch", s.meanBatchSize},
                              {"prefix_hit_rate", s.prefixCacheHitRate}};
    };
    nlohmann::json j{{"trace", row.trace},
                     {"config", row.config},
                     {"requests", row.requests},
                     {"real", side(row.realSession, row.real, row.realTokens)},
                     {"simulated", side(row.simSession, row.sim, row.simTokens)},
                     {"error", nlohmann::json::object()}};
    for (const auto &[metric, e] : row.errors)
        j["error"][metric] = e;
    return j;
}

nlohmann::json fidelityJson(const FidelityOptions &o, const FidelityResult &r)
{
    nlohmann::json modes = nlohmann::json::object();
    for (const FidelityMode &m : r.modes)
        modes[m.name()] = {{"median_abs_error", median(m.errors)}, {"worst_abs_error", worstOf(m.errors)}};
    nlohmann::json rows = nlohmann::json::array();
    for (const FidelityRow &row : r.rows)
        rows.push_back(rowJson(row));
    return {{"stage", "fidelity"},
            {"model", r.info.name},
            {"preset", o.spec.preset},
            {"device", r.info.device},
            {"threads", r.threads},
            {"seconds", o.seconds},
            {"load", o.load},
            {"calibrate", o.calibrationMode},
            {"noise", o.noiseName},
            {"modes", modes},
            {"load_average_median", median(r.loads)},
            {"noise_floor_median_abs_error",
             r.floorErrors.empty() ? nlohmann::json() : nlohmann::json(median(r.floorErrors))},
            {"calibration", toJson(r.calibration)},
            {"rows", rows},
            {"median_abs_error", median(r.errors)},
            {"worst_abs_error", r.worstValue},
            {"worst", r.worstWhere}};
}

} // namespace

int runFidelityBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, fidelityStage()); rc >= 0)
        return rc;
    const auto options = parseFidelity(args);
    if (!options)
        return report(options.error());
    FidelityPrinter printer;
    const auto result = runFidelity(*options, printer);
    if (!result)
        return report(result.error());
    printSummary(*options, *result);
    // Without --json the table above is the whole output (exit 0).
    return args.has("json") ? writeJsonOption(args, fidelityJson(*options, *result)) : 0;
}

} // namespace bp::bench
