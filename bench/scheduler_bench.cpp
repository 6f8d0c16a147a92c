// batchpilot-bench scheduler: parse the flags, run one mode
// (scheduler_run.h), print its figures, write them as JSON with --json.
#include "scheduler_bench.h"

#include "scheduler_run.h"

#include "engine/config/config_json.h"

#include <cstdio>

namespace bp::bench {

namespace {

const char *const kPrefix = "batchpilot-bench scheduler: ";

double us(const LatencyHistogram &h, double q)
{
    return double(h.quantile(q)) / 1e3;
}
double maxUs(const LatencyHistogram &h)
{
    return double(h.max()) / 1e3;
}

StageResult<SchedulerBenchOptions> parseScheduler(const Args &args)
{
    SchedulerBenchOptions o;
    o.saturate = args.has("saturate");
    o.rate = args.num("rate", 50000);
    o.producers = int(args.num("producers", 1));
    o.duration = args.num("duration", 5);
    o.warmup = args.num("warmup", 1);
    o.length = int(args.num("length", 16));
    if (o.rate <= 0 || o.producers < 1 || o.duration <= 0 || o.warmup < 0 || o.length < 1)
        return StageError{
            2, kPrefix + std::string("--rate, --producers, --duration and --length must be positive")};
    o.engine.backend = makeEchoBackend();
    auto policy = parsePolicy(args.str("policy", "dynamic"));
    if (!policy)
        return StageError{2, kPrefix + ("unknown policy '" + args.str("policy", "") + "'")};
    BatchingConfig &b = o.engine.batching;
    b.policy = *policy;
    b.maxBatchSize = int(args.num("max-batch", 64));
    b.staticBatchSize = b.maxBatchSize;
    b.maxQueueDelay = std::chrono::microseconds(std::int64_t(args.num("delay-us", 100)));
    b.instances = int(args.num("instances", 1));
    b.queueCapacity = int(args.num("queue", 65536));
    o.engine.spin = std::chrono::microseconds(std::int64_t(args.num("spin-us", 150)));
    if (args.has("queued")) {
        const double queued = args.num("queued", 0);
        if (!(queued >= 0 && queued <= 999'000))
            return StageError{2, kPrefix + std::string("--queued must be in [0, 999000]")};
        o.queued = std::size_t(queued);
    }
    return o;
}

void printPaced(const SchedulerBenchOptions &o, const PacedFigures &f)
{
    const BatchingConfig &b = o.engine.batching;
    std::printf(
        "batchpilot-bench scheduler  model=builtin:echo policy=%s max_batch=%d delay=%s producers=%d %s\n",
        std::string(policyName(b.policy)).c_str(), b.maxBatchSize, formatDuration(b.maxQueueDelay).c_str(),
        o.producers,
        o.saturate ? "mode=saturate" : ("target_rate=" + std::to_string(int(o.rate)) + "/s").c_str());
    std::printf("  measured %.1f s after %.1f s warm-up, spin %s\n", f.seconds, o.warmup,
                formatDuration(o.engine.spin).c_str());
    std::printf("  completed %llu  rejected %llu  achieved %.0f req/s  mean batch %.1f\n",
                (unsigned long long)f.completed, (unsigned long long)f.rejected, f.achievedRate(),
                f.meanBatch);
    std::printf("  overhead per request (µs): p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.1f\n",
                us(f.overhead, 0.5), us(f.overhead, 0.9), us(f.overhead, 0.99), us(f.overhead, 0.999),
                maxUs(f.overhead));
    std::printf(
        "  per batch (µs): scheduler lateness p50 %.2f p99 %.2f | hand-off to executor p50 %.2f p99 %.2f\n",
        us(f.lateness, 0.5), us(f.lateness, 0.99), us(f.handoff, 0.5), us(f.handoff, 0.99));
}

nlohmann::json pacedJson(const SchedulerBenchOptions &o, const PacedFigures &f)
{
    const LatencyHistogram &h = f.overhead;
    return {{"stage", "scheduler"},
            {"mode", o.saturate ? "saturate" : "paced"},
            {"config", toJson(o.engine.batching)},
            {"producers", o.producers},
            {"spin_us", toMicros(o.engine.spin)},
            {"target_rate", o.saturate ? 0.0 : o.rate},
            {"seconds", f.seconds},
            {"completed", f.completed},
            {"rejected", f.rejected},
            {"achieved_rate", f.achievedRate()},
            {"mean_batch_size", f.meanBatch},
            {"scheduler_lateness_us", {{"p50", us(f.lateness, 0.5)}, {"p99", us(f.lateness, 0.99)}}},
            {"handoff_us", {{"p50", us(f.handoff, 0.5)}, {"p99", us(f.handoff, 0.99)}}},
            {"overhead_us",
             {{"p50", us(h, 0.5)},
              {"p90", us(h, 0.9)},
              {"p99", us(h, 0.99)},
              {"p999", us(h, 0.999)},
              {"max", maxUs(h)}}}};
}

void printQueued(const SchedulerBenchOptions &o, const QueuedFigures &f)
{
    std::printf(
        "batchpilot-bench scheduler  model=builtin:echo policy=%s max_batch=%d mode=queued queued=%zu "
        "priorities=0-3\n",
        std::string(policyName(f.config.policy)).c_str(), f.config.maxBatchSize, *o.queued);
    std::printf("  measured %.1f s after %.1f s warm-up: %llu dispatches, config history %zu entries\n",
                o.duration, o.warmup, (unsigned long long)f.dispatches, f.configHistory);
    std::printf("  dispatch (runSchedulerOnce, µs): p50 %.2f  p90 %.2f  p99 %.2f  max %.1f\n",
                us(f.dispatch, 0.5), us(f.dispatch, 0.9), us(f.dispatch, 0.99), maxUs(f.dispatch));
    std::printf("  snapshot() (µs): p50 %.2f  p99 %.2f  (%llu calls)\n", us(f.snapshot, 0.5),
                us(f.snapshot, 0.99), (unsigned long long)f.snapshot.count());
}

nlohmann::json queuedJson(const SchedulerBenchOptions &o, const QueuedFigures &f)
{
    const LatencyHistogram &d = f.dispatch;
    return {
        {"stage", "scheduler"},
        {"mode", "queued"},
        {"queued", *o.queued},
        {"config", toJson(f.config)},
        {"seconds", o.duration},
        {"dispatches", f.dispatches},
        {"config_history", f.configHistory},
        {"dispatch_us", {{"p50", us(d, 0.5)}, {"p90", us(d, 0.9)}, {"p99", us(d, 0.99)}, {"max", maxUs(d)}}},
        {"snapshot_us", {{"p50", us(f.snapshot, 0.5)}, {"p99", us(f.snapshot, 0.99)}}}};
}

} // namespace

const StageOptions &schedulerStage()
{
    static const StageOptions stage{
        "scheduler",
        "[OPTIONS]",
        "engine overhead with builtin:echo (no compute)",
        "Paced mode: open-loop arrivals at --rate; the overhead per request is the completion time minus "
        "the\n"
        "submit time minus the wait the policy intended, as percentiles. --saturate: producers submit as "
        "fast\n"
        "as the queue admits; the completed rate is the highest sustained request rate.",
        {
            {"rate", "R", "requests/s offered in paced mode (default 50000)"},
            {"producers", "P", "submitting threads (default 1)"},
            {"duration", "S", "measured seconds (default 5)"},
            {"warmup", "S", "seconds before the measurement (default 1)"},
            {"saturate", "", "submit as fast as the queue admits instead of pacing"},
            {"policy", "NAME", "batching policy (default dynamic)"},
            {"max-batch", "N", "max batch size, also the static batch size (default 64)"},
            {"delay-us", "U", "max queue delay in microseconds (default 100)"},
            {"length", "L", "tokens per request (default 16)"},
            {"instances", "N", "executor instances (default 1)"},
            {"queue", "N", "admission queue capacity (default 65536)"},
            {"queued", "N",
             "keep N requests queued (priorities 0-3) and time each dispatch and snapshot() "
             "under manual scheduling: the cost of the work under the engine mutex"},
            {"spin-us", "U", "how long an idle executor spins before sleeping (default 150; 0 = never)"},
            {"json", "FILE", "write the figures as JSON"},
        }};
    return stage;
}

int runSchedulerBench(const Args &args)
{
    if (int rc = handleHelpAndUnknown(args, schedulerStage()); rc >= 0)
        return rc;
    const auto options = parseScheduler(args);
    if (!options)
        return report(options.error());
    nlohmann::json json;
    if (options->queued) {
        const auto figures = runQueued(*options);
        if (!figures)
            return report(figures.error());
        printQueued(*options, *figures);
        json = queuedJson(*options, *figures);
    } else {
        const auto figures = runPaced(*options);
        if (!figures)
            return report(figures.error());
        printPaced(*options, *figures);
        json = pacedJson(*options, *figures);
    }
    return args.has("json") ? writeJsonOption(args, json) : 0;
}

} // namespace bp::bench
