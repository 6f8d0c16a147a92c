#include "fidelity_bench.h"

#include "fidelity_inputs.h"
#include "model_profile.h"

#include "engine/sim/calibration/calibration.h"
#include "engine/sim/calibration/statistics.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/store/session_summary.h"
#include "engine/store/trace_store.h"
#include "engine/workload/trace_csv.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include <cstdlib>

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

int runFidelityBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, fidelityStage()); rc >= 0)
        return rc;
    const ModelSpec spec = modelSpecFromArgs(args, "builtin:tiny-encoder");
    const double seconds = args.num("seconds", 3);
    const double load = args.num("load", 0.3);
    const double lengthScale = args.num("length-scale", 0.125);
    const std::string azurePath = args.str("azure", "resources/traces/azure_llm_conv_2023.csv");
    const std::string calibrationMode = args.str("calibrate", "sessions");
    const std::string noiseName = args.str("noise", "drawn");
    if (!(seconds > 0) || !(load > 0) || !(lengthScale > 0)) {
        std::fprintf(stderr, "fidelity: --seconds, --load and --length-scale must be positive\n");
        return 2;
    }
    auto backend = createBackend(spec);
    if (!backend) {
        std::fprintf(stderr, "fidelity: %s\n", backend.status().message().c_str());
        return 1;
    }
    const ModelInfo &info = (*backend)->info();

    const std::string dbPath = args.str("db", (std::filesystem::temp_directory_path() /
                                               ("bp-fidelity-" + std::to_string(::getpid()) + ".sqlite"))
                                                  .string());
    const bool temporary = !args.has("db");
    auto store = TraceStore::open(dbPath);
    if (!store) {
        std::fprintf(stderr, "fidelity: %s\n", store.status().message().c_str());
        return 1;
    }

    // 1. calibration: the profile alone (no recorded session), as a new user would start
    const int threads =
        spec.threads > 0 ? spec.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    Calibration key = Calibration::forModel(info, spec.preset, threads);
    key.source = args.has("full-grid") ? "profile" : "profile (quick)";
    const TimePoint calStart = SteadyClock::now();
    auto measured =
        measureProfile(*backend, args.has("full-grid") ? CalibrationGrid{} : CalibrationGrid::quick(), key);
    if (!measured) {
        std::fprintf(stderr, "fidelity: %s\n", measured.status().message().c_str());
        return 1;
    }
    auto cal = calibrate(key, *measured);
    if (!cal) {
        std::fprintf(stderr, "fidelity: %s\n", cal.status().message().c_str());
        return 1;
    }
    std::printf("calibration: %s, %zu measurements in %.1f s; fit error median %.1f%%, worst %.1f%%; "
                "2 executors at once: x%.2f\n",
                cal->describe().c_str(), cal->observations, toSeconds(SteadyClock::now() - calStart),
                100 * cal->error.medianRel, 100 * cal->error.maxRel, cal->cost.slowdownAt(2));

    // 2. two traces sized to `load` of batch-1 capacity at their mean length
    auto azure = parseTraceFile(azurePath);
    if (!azure) {
        std::fprintf(stderr, "fidelity: %s\n", azure.status().message().c_str());
        return 1;
    }
    auto capacityAt = [&](const std::vector<TraceRow> &rows) {
        double meanIn = 0, meanOut = 0;
        for (const TraceRow &r : rows) {
            meanIn += r.inputTokens / double(rows.size());
            meanOut += r.outputTokens / double(rows.size());
        }
        const std::vector<int> want{int(std::lround(meanOut))};
        return 1 / toSeconds(cal->cost.batchCost(1, int(std::lround(meanIn)), want).run);
    };
    std::vector<std::pair<std::string, std::vector<TraceRow>>> traces;
    const bool prefixMode = args.has("prefix");
    PrefixTrace prefixed; // --prefix: the trace's blocks
    if (prefixMode) {
        const int system = int(args.num("system-prompt", 128));
        prefixed = sharedPromptTrace(1000, 1, system, 7);
        const double rate = load * capacityAt(prefixed.rows);
        const std::size_t n = std::max<std::size_t>(20, std::size_t(rate * seconds));
        prefixed = sharedPromptTrace(n, rate, system, 7);
        traces.push_back({"prefix", fitTrace(prefixed.rows, seconds, 1, info)});
    } else {
        // the Azure rows, lengths scaled, and as many as `load` of capacity takes in `seconds`
        auto sized = fitTrace(azure->rows, 1, lengthScale, info);
        const double rate = load * capacityAt(sized);
        // A multiple of the static config's batch size: a real-clock replay
        // waits for every completion before it drains, so a partial static
        // batch would keep it waiting forever (docs/benchmarks.md).
        const std::size_t n =
            std::clamp<std::size_t>(std::size_t(rate * seconds), 20, azure->rows.size()) / 4 * 4;
        std::vector<TraceRow> window(azure->rows.begin(), azure->rows.begin() + std::ptrdiff_t(n));
        traces.push_back({"azure", fitTrace(window, seconds, lengthScale, info)});
        auto bursty = burstyRows(1000, 1, std::min(256, info.maxSequenceLength), 7);
        bursty = fitTrace(bursty, 1, 1, info);
        const double burstyRate = load * capacityAt(bursty);
        const std::size_t m = std::max<std::size_t>(20, std::size_t(burstyRate * seconds)) / 4 * 4;
        traces.push_back(
            {"bursty", fitTrace(burstyRows(m, burstyRate, std::min(256, info.maxSequenceLength), 7), seconds,
                                1, info)});
    }

    // 3. real replays of every config, then simulated ones: under the
    // chosen calibration and cost noise (the table), and under every other
    // combination (a summary line each), all against the same real runs.
    struct Mode {
        std::string calibration; // "profile" or "sessions"
        CostNoise noise = CostNoise::None;
        std::string name() const
        {
            return calibration + "/" +
                   (noise == CostNoise::None   ? "none"
                    : noise == CostNoise::Mean ? "mean"
                                               : "drawn");
        }
        std::vector<double> errors;
    };
    std::vector<Mode> modes;
    for (const char *c : {"profile", "sessions"})
        for (CostNoise n : {CostNoise::None, CostNoise::Mean, CostNoise::Drawn})
            modes.push_back({c, n, {}});
    const std::string chosenName = calibrationMode + "/" + noiseName;
    const auto chosen =
        std::find_if(modes.begin(), modes.end(), [&](const Mode &m) { return m.name() == chosenName; });
    if (chosen == modes.end()) {
        std::fprintf(stderr, "fidelity: --calibrate is profile or sessions, --noise none, mean or drawn\n");
        return 2;
    }
    std::rotate(modes.begin(), chosen, chosen + 1); // the chosen one first

    nlohmann::json rows = nlohmann::json::array();
    std::vector<double> errors;
    std::string worstWhere;
    double worstValue = 0;
    std::vector<double> loads;
    std::vector<double> floorErrors; // --repeat-real: second real run vs first
    const bool repeatReal = args.has("repeat-real");
    const bool steps = (*backend)->steps() != nullptr && info.generative;
    if (prefixMode && !steps) {
        std::fprintf(stderr,
                     "fidelity: --prefix needs a decoder with step-level generation (policy continuous)\n");
        return 2;
    }
    for (auto &[traceName, traceRows] : traces) {
        int longest = 1;
        for (const TraceRow &r : traceRows)
            longest = std::max(longest, r.inputTokens);
        auto added = prefixMode ? (*store)->addTrace(traceName, "", TraceFormat::Mooncake, traceRows, 0,
                                                     prefixed.ids, prefixed.blockTokens)
                                : (*store)->addTrace(traceName, "", TraceFormat::Plain, traceRows);
        if (!added) {
            std::fprintf(stderr, "fidelity: %s\n", added.status().message().c_str());
            return 1;
        }
        auto configs = prefixMode ? prefixConfigs() : fidelityConfigs(longest, steps);
        if (args.has("configs"))
            configs.resize(std::min(configs.size(), std::size_t(std::max(1.0, args.num("configs", 20)))));
        std::vector<std::int64_t> realSessions;
        std::vector<SessionObservations> realRows;
        for (const NamedConfig &nc : configs) {
            ReplayOptions o;
            o.source = {ReplaySource::Kind::Trace, added->id};
            o.config = nc.config;
            o.clock = ReplayClock::Real;
            o.notes = "fidelity " + traceName + " " + nc.name + " (real)";
            loads.push_back(loadAverage());
            auto real = Replayer(*store, *backend).run(o);
            if (!real) {
                std::fprintf(stderr, "fidelity: %s\n", real.status().message().c_str());
                return 1;
            }
            std::fprintf(stderr, "fidelity: %s / %s replayed (load average %.1f)\n", traceName.c_str(),
                         nc.name.c_str(), loadAverage());
            realSessions.push_back(real->sessionId);
            if (repeatReal) {
                // the noise floor: the same config replayed for real again
                o.notes = "fidelity " + traceName + " " + nc.name + " (real, again)";
                auto again = Replayer(*store, *backend).run(o);
                if (!again) {
                    std::fprintf(stderr, "fidelity: %s\n", again.status().message().c_str());
                    return 1;
                }
                const SessionSummary x = (*store)->summary(real->sessionId).value();
                const SessionSummary y = (*store)->summary(again->sessionId).value();
                const TokenFigures tx = tokenPercentiles(**store, real->sessionId);
                const TokenFigures ty = tokenPercentiles(**store, again->sessionId);
                for (double e :
                     {relError(y.throughputRps, x.throughputRps), relError(y.latencyP50Ms, x.latencyP50Ms),
                      relError(y.latencyP99Ms, x.latencyP99Ms)})
                    floorErrors.push_back(std::abs(e));
                if (info.generative) {
                    floorErrors.push_back(std::abs(relError(ty.ttftP50, tx.ttftP50)));
                    if (tx.tpotP50 > 0)
                        floorErrors.push_back(std::abs(relError(ty.tpotP50, tx.tpotP50)));
                }
            }
            auto observed = sessionObservations(**store, real->sessionId, info.generative);
            if (!observed) {
                std::fprintf(stderr, "fidelity: %s\n", observed.status().message().c_str());
                return 1;
            }
            realRows.push_back(std::move(*observed));
        }
        // "sessions": the profile and the batch rows of the OTHER configs'
        // real runs of this trace (leave-one-out: never the run it predicts)
        auto calibrationFor = [&](std::size_t i) -> Result<Calibration> {
            std::vector<CostObservation> obs = *measured;
            std::vector<double> overheads, stepOverheads, lateness;
            for (std::size_t j = 0; j < realRows.size(); ++j) {
                if (j == i)
                    continue;
                obs.insert(obs.end(), realRows[j].batches.begin(), realRows[j].batches.end());
                if (realRows[j].overheadSamples > 0)
                    overheads.push_back(realRows[j].overheadS);
                if (realRows[j].stepOverheadSamples > 0)
                    stepOverheads.push_back(realRows[j].stepOverheadS);
                lateness.insert(lateness.end(), realRows[j].lateness.begin(), realRows[j].lateness.end());
            }
            Calibration k = key;
            k.source = "profile + sessions (leave-one-out)";
            k.cost.overheadS = median(overheads);
            k.cost.stepOverheadS = median(stepOverheads);
            k.cost.dispatchLateness = sampleQuantiles(std::move(lateness));
            return calibrate(k, obs);
        };

        std::printf("\n%-7s %-20s %9s %9s %7s %9s %9s %7s %9s %9s %7s%s\n", "trace", "config", "real rps",
                    "sim rps", "err", "real p50", "sim p50", "err", "real p99", "sim p99", "err",
                    info.generative ? "  ttft p50 real/sim (err)  tpot p50 real/sim (err)" : "");
        for (std::size_t i = 0; i < configs.size(); ++i) {
            const NamedConfig &nc = configs[i];
            const SessionSummary a = (*store)->summary(realSessions[i]).value();
            const TokenFigures ra = tokenPercentiles(**store, realSessions[i]);
            auto leaveOneOut = calibrationFor(i);
            if (!leaveOneOut) {
                std::fprintf(stderr, "fidelity: %s\n", leaveOneOut.status().message().c_str());
                return 1;
            }
            for (std::size_t m = 0; m < modes.size(); ++m) {
                Mode &mode = modes[m];
                ReplayOptions o;
                o.source = {ReplaySource::Kind::Trace, added->id};
                o.config = nc.config;
                o.notes = "fidelity " + traceName + " " + nc.name + " (simulated, " + mode.name() + ")";
                SimulatedReplay simulator(*store, mode.calibration == "profile" ? *cal : *leaveOneOut);
                simulator.setCostNoise(mode.noise, 1 + i);
                auto sim = simulator.run(o);
                if (!sim) {
                    std::fprintf(stderr, "fidelity: %s\n", sim.status().message().c_str());
                    return 1;
                }
                const SessionSummary b = (*store)->summary(sim->sessionId).value();
                const TokenFigures sb = tokenPercentiles(**store, sim->sessionId);
                std::vector<std::pair<std::string, double>> cell{
                    {"throughput", relError(b.throughputRps, a.throughputRps)},
                    {"p50", relError(b.latencyP50Ms, a.latencyP50Ms)},
                    {"p99", relError(b.latencyP99Ms, a.latencyP99Ms)}};
                if (info.generative) {
                    cell.push_back({"ttft p50", relError(sb.ttftP50, ra.ttftP50)});
                    if (ra.tpotP50 > 0)
                        cell.push_back({"tpot p50", relError(sb.tpotP50, ra.tpotP50)});
                }
                for (auto &[metric, e] : cell)
                    mode.errors.push_back(std::abs(e));
                if (m != 0)
                    continue;
                // the chosen mode: the table row
                nlohmann::json row{{"trace", traceName},
                                   {"config", nc.name},
                                   {"requests", traceRows.size()},
                                   {"real",
                                    {{"session", realSessions[i]},
                                     {"throughput_rps", a.throughputRps},
                                     {"p50_ms", a.latencyP50Ms},
                                     {"p99_ms", a.latencyP99Ms},
                                     {"ttft_p50_ms", ra.ttftP50},
                                     {"tpot_p50_ms", ra.tpotP50},
                                     {"mean_batch", a.meanBatchSize}}},
                                   {"simulated",
                                    {{"session", sim->sessionId},
                                     {"throughput_rps", b.throughputRps},
                                     {"p50_ms", b.latencyP50Ms},
                                     {"p99_ms", b.latencyP99Ms},
                                     {"ttft_p50_ms", sb.ttftP50},
                                     {"tpot_p50_ms", sb.tpotP50},
                                     {"mean_batch", b.meanBatchSize}}},
                                   {"error", nlohmann::json::object()}};
                for (auto &[metric, e] : cell) {
                    row["error"][metric] = e;
                    errors.push_back(std::abs(e));
                    if (std::abs(e) > worstValue) {
                        worstValue = std::abs(e);
                        worstWhere = traceName + " / " + nc.name + " / " + metric;
                    }
                }
                row["real"]["prefix_hit_rate"] = a.prefixCacheHitRate;
                row["simulated"]["prefix_hit_rate"] = b.prefixCacheHitRate;
                rows.push_back(row);
                std::string tokenText;
                if (info.generative) {
                    char buf[160];
                    std::snprintf(buf, sizeof buf, "  %7.2f/%7.2f (%+5.0f%%)  %6.2f/%6.2f (%+5.0f%%)",
                                  ra.ttftP50, sb.ttftP50, 100 * relError(sb.ttftP50, ra.ttftP50), ra.tpotP50,
                                  sb.tpotP50, 100 * relError(sb.tpotP50, ra.tpotP50));
                    tokenText = buf;
                }
                std::printf("%-7s %-20s %9.1f %9.1f %+6.0f%% %9.2f %9.2f %+6.0f%% %9.2f %9.2f %+6.0f%%%s\n",
                            traceName.c_str(), nc.name.c_str(), a.throughputRps, b.throughputRps,
                            100 * cell[0].second, a.latencyP50Ms, b.latencyP50Ms, 100 * cell[1].second,
                            a.latencyP99Ms, b.latencyP99Ms, 100 * cell[2].second, tokenText.c_str());
                if (prefixMode)
                    std::printf("%-7s %-20s prefix hit rate real %.1f%%, simulated %.1f%% (%+.1f points)\n",
                                "", "", 100 * a.prefixCacheHitRate, 100 * b.prefixCacheHitRate,
                                100 * (b.prefixCacheHitRate - a.prefixCacheHitRate));
                std::fflush(stdout);
            }
        }
    }
    const double med = median(errors);
    std::printf("\nmedian absolute error %.1f%% over %zu figures; worst %.1f%% (%s)\n", 100 * med,
                errors.size(), 100 * worstValue, worstWhere.c_str());
    std::printf("load average during the real replays: median %.1f, highest %.1f (%u cores)\n", median(loads),
                loads.empty() ? 0.0 : *std::max_element(loads.begin(), loads.end()),
                std::thread::hardware_concurrency());
    if (!floorErrors.empty())
        std::printf(
            "noise floor: each config replayed for real twice, the second vs the first: median |error| "
            "%.1f%% over %zu figures, worst %.1f%%\n",
            100 * median(floorErrors), floorErrors.size(),
            100 * *std::max_element(floorErrors.begin(), floorErrors.end()));
    std::printf("\nthe same real runs under every calibration / cost noise (median |error|, worst):\n");
    nlohmann::json modeJson = nlohmann::json::object();
    for (const Mode &m : modes) {
        const double worstOf = m.errors.empty() ? 0 : *std::max_element(m.errors.begin(), m.errors.end());
        std::printf("  %-16s %6.1f%%  %6.1f%%%s\n", m.name().c_str(), 100 * median(m.errors), 100 * worstOf,
                    m.name() == chosenName ? "  (the table)" : "");
        modeJson[m.name()] = {{"median_abs_error", median(m.errors)}, {"worst_abs_error", worstOf}};
    }
    nlohmann::json j{{"stage", "fidelity"},
                     {"model", info.name},
                     {"preset", spec.preset},
                     {"device", info.device},
                     {"threads", threads},
                     {"seconds", seconds},
                     {"load", load},
                     {"calibrate", calibrationMode},
                     {"noise", noiseName},
                     {"modes", modeJson},
                     {"load_average_median", median(loads)},
                     {"noise_floor_median_abs_error",
                      floorErrors.empty() ? nlohmann::json() : nlohmann::json(median(floorErrors))},
                     {"calibration", toJson(*cal)},
                     {"rows", rows},
                     {"median_abs_error", med},
                     {"worst_abs_error", worstValue},
                     {"worst", worstWhere}};
    // Without --json the table above is the whole output (exit 0).
    const int rc = args.has("json") ? writeJsonOption(args, j) : 0;
    if (temporary) {
        store->reset();
        std::error_code ec;
        for (const char *suffix : {"", "-wal", "-shm"})
            std::filesystem::remove(dbPath + suffix, ec);
    }
    return rc;
}

} // namespace bp::bench