// batchpilot-bench store: each part selected with --part (default: all) is
// parsed, measured (store_run.h), printed and added to the --json figures in
// turn. Every part works on a temporary database that is removed afterwards.
#include "store_bench.h"

#include "store_run.h"

#include "engine/model/model_registry.h"
#include "engine/sim/calibration/statistics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace bp::bench {

namespace {

const char *const kPrefix = "batchpilot-bench store: ";

struct StoreBenchOptions {
    std::string part;
    double seconds = 3;
    int batch = 32;
    double rowsPerS = 200000;
    std::string writer;
    WriterPriority priority = WriterPriority::Nice;
    bool runs(const char *name) const { return part == "all" || part == name; }
};

StageResult<StoreBenchOptions> parseStore(const Args &args)
{
    StoreBenchOptions o;
    o.part = args.str("part", "all");
    o.seconds = args.num("seconds", 3);
    o.batch = int(args.num("batch", 32));
    o.rowsPerS = args.num("rows-per-s", 200000);
    if (o.seconds <= 0 || o.batch < 1 || o.rowsPerS <= 0)
        return StageError{2, kPrefix + std::string("--seconds, --batch and --rows-per-s must be positive")};
    o.writer = args.str("writer", "nice");
    if (o.writer != "idle" && o.writer != "normal" && o.writer != "nice")
        return StageError{2, kPrefix + std::string("--writer must be nice, idle or normal")};
    o.priority = o.writer == "idle"     ? WriterPriority::Idle
                 : o.writer == "normal" ? WriterPriority::Normal
                                        : WriterPriority::Nice;
    return o;
}

// The overhead part's flags, read only when that part runs.
ServingSetup servingFromArgs(const Args &args, const StoreBenchOptions &o)
{
    ServingSetup setup;
    setup.producers = int(args.num("producers", 1));
    setup.seconds = o.seconds;
    setup.length = int(args.num("length", 16));
    setup.newTokens = int(args.num("new-tokens", 0));
    setup.queueRows = std::size_t(args.num("queue-rows", 0));
    setup.maxBatch = int(args.num("max-batch", 64));
    setup.priority = o.priority;
    return setup;
}

ModelSpec modelFromArgs(const Args &args)
{
    ModelSpec spec;
    spec.name = args.str("model", "builtin:echo");
    spec.preset = args.str("preset", "small");
    spec.device = args.str("device", "cpu");
    return spec;
}

// The import part's trace: --trace, or the shared Azure trace.
std::string importTraceFromArgs(const Args &args)
{
    std::string trace = args.str("trace", "");
    if (trace.empty()) {
        const char *source = std::getenv("BATCHPILOT_SOURCE_DIR");
        trace = std::string(source ? source : ".") + "/resources/traces/azure_llm_conv_2023.csv";
    }
    return trace;
}

// Each part's printer prints its lines and returns its object of the --json figures.
nlohmann::json printRate(const RatePart &p)
{
    const RateResult &max = p.max, &paced = p.paced;
    const double maxRate = double(max.written) * p.batch / (p.batch + 1) / max.seconds;
    const std::uint64_t pacedOffered = paced.requestRows + paced.batchRows;
    std::printf("store rate  batches of %d requests, %.1f s each\n", p.batch, p.seconds);
    std::printf("  as fast as possible: %.0f request rows/s written (%.0f rows/s incl. batch rows), "
                "%llu rows dropped at the queue\n",
                maxRate, double(max.written) / max.seconds, (unsigned long long)max.dropped);
    std::printf("  paced at %.0f request rows/s: %llu of %llu rows written, %llu dropped\n", p.rowsPerS,
                (unsigned long long)paced.written, (unsigned long long)pacedOffered,
                (unsigned long long)paced.dropped);
    // CPU per row does not depend on how busy the machine is: the writer's
    // ceiling on one free core.
    const double cpuPerRowUs = max.written ? max.writerCpuS * 1e6 / double(max.written) : 0;
    const double pacedCpuPerRowUs = paced.written ? paced.writerCpuS * 1e6 / double(paced.written) : 0;
    std::printf("  writer CPU: %.2f us per row flat out (%.0f rows per CPU-second), %.2f us per row paced "
                "(%.0f%% of one core at the paced rate)\n",
                cpuPerRowUs, cpuPerRowUs > 0 ? 1e6 / cpuPerRowUs : 0.0, pacedCpuPerRowUs,
                100 * paced.writerCpuS / paced.seconds);
    const double pushNsPerRow = 1e9 * paced.pushSeconds / double(pacedOffered);
    std::printf("  engine-thread cost (inside onBatchCompleted, paced): %.0f ns per row\n", pushNsPerRow);
    return {{"batch", p.batch},
            {"seconds", p.seconds},
            {"max_request_rows_per_s", maxRate},
            {"max_dropped", max.dropped},
            {"paced_request_rows_per_s", p.rowsPerS},
            {"paced_written", paced.written},
            {"paced_offered", pacedOffered},
            {"paced_dropped", paced.dropped},
            {"writer_cpu_us_per_row", cpuPerRowUs},
            {"paced_writer_cpu_fraction", paced.writerCpuS / paced.seconds},
            {"push_ns_per_row", pushNsPerRow}};
}

nlohmann::json printOverhead(const OverheadPart &p)
{
    const ServingSetup &s = p.setup;
    std::printf("store overhead  %s (length %d, %d new tokens) saturated by %d producer(s), %d rounds of "
                "%.1f s\n",
                p.spec.name.c_str(), s.length, s.newTokens, s.producers, p.rounds, s.seconds);
    std::printf(
        "  logging off: %.0f req/s   logging on: %.0f req/s (medians)   median of per-round on/off = %.3f"
        "   rows dropped: %llu\n",
        p.medianOff, p.medianOn, p.medianRatio, (unsigned long long)p.dropped);
    return {{"model", p.spec.name},      {"preset", p.spec.preset},  {"length", s.length},
            {"new_tokens", s.newTokens}, {"producers", s.producers}, {"rounds", p.rounds},
            {"off_rps", p.off},          {"on_rps", p.on},           {"median_off", p.medianOff},
            {"median_on", p.medianOn},   {"ratio", p.medianRatio},   {"ratios", p.ratios},
            {"dropped", p.dropped}};
}

nlohmann::json printImport(const ImportPart &p)
{
    std::printf("store import  %s: %llu rows, median %.3f s, best %.3f s over %d runs\n", p.trace.c_str(),
                (unsigned long long)p.rows, median(p.seconds),
                *std::min_element(p.seconds.begin(), p.seconds.end()), int(p.seconds.size()));
    return {{"trace", p.trace}, {"rows", p.rows}, {"seconds", p.seconds}, {"median_s", median(p.seconds)}};
}

} // namespace

const StageOptions &storeStage()
{
    static const StageOptions stage{
        "store",
        "[OPTIONS]",
        "trace store: logging rate, serving overhead of logging, trace import time",
        "rate: the trace writer alone, flat out and paced at --rows-per-s. overhead: a model served at\n"
        "saturation with logging off and on in alternating rounds (medians and their ratio). import: the\n"
        "import time of a trace CSV. Every part uses a temporary database, removed afterwards.",
        {
            {"part", "rate|overhead|import|all", "which part to run (default all)"},
            {"seconds", "S", "rate and overhead: seconds per measurement (default 3)"},
            {"batch", "N", "rate: requests per synthetic batch (default 32)"},
            {"rows-per-s", "R", "rate: paced request rows/s (default 200000)"},
            {"writer", "nice|idle|normal", "CPU priority of the writer thread (default nice)"},
            {"producers", "P", "overhead: submitting threads (default 1)"},
            {"rounds", "N", "overhead: rounds of logging off/on (default 3)"},
            {"model", "NAME|FILE.pt", "overhead: the model served (default builtin:echo)"},
            {"preset", "P", "overhead: size preset of a built-in model (default small)"},
            {"device", "D", "overhead: cpu (default), cuda, cuda:N"},
            {"length", "L", "overhead: tokens per request (default 16)"},
            {"new-tokens", "N", "overhead: tokens generated per request by a decoder (default 0)"},
            {"max-batch", "N", "overhead: max batch size (default 64)"},
            {"queue-rows", "N", "overhead: the sink's queue capacity in rows (default: the sink's own)"},
            {"trace", "FILE.csv", "import: the trace (default: the shared Azure trace)"},
            {"repeat", "N", "import: imports timed, median and best reported (default 5)"},
            {"json", "FILE", "write the figures as JSON"},
        }};
    return stage;
}

int runStoreBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, storeStage()); rc >= 0)
        return rc;
    const auto o = parseStore(args);
    if (!o)
        return report(o.error());
    nlohmann::json json{{"stage", "store"}, {"writer", o->writer}};
    TempDir tmp;
    if (o->runs("rate"))
        json["rate"] = printRate(measureRate(tmp, o->batch, o->seconds, o->rowsPerS, o->priority));
    if (o->runs("overhead")) {
        ServingSetup setup = servingFromArgs(args, *o);
        const ModelSpec spec = modelFromArgs(args);
        auto backend = servingBackend(spec);
        if (!backend)
            return report(backend.error());
        setup.backend = *backend;
        const int rounds = int(args.num("rounds", 3));
        json["overhead"] = printOverhead(measureOverhead(tmp, spec, setup, rounds));
    }
    if (o->runs("import")) {
        const std::string trace = importTraceFromArgs(args);
        const auto part = measureImport(tmp, trace, std::max(1, int(args.num("repeat", 5))));
        if (!part)
            return report(part.error());
        json["import"] = printImport(*part);
    }
    return args.has("json") ? writeJsonOption(args, json) : 0;
}

} // namespace bp::bench
