// Engine overhead with builtin:echo (no compute):
//  - paced mode: open-loop arrivals at --rate from --producers threads; per
//    request overhead = (completion callback time - submit time) - the wait
//    the policy intended (Timing::intendedWait), reported as percentiles;
//  - saturation mode (--saturate): producers submit as fast as the queue
//    admits; the completed rate is the highest sustained request rate;
//  - queued mode (--queued N): the work done under the engine mutex as the
//    queue grows. N requests stay queued (priorities 0-3, so the priority
//    order is in play) while one thread, with manual scheduling, refills
//    and dispatches one full batch at a time; each runSchedulerOnce() (poll,
//    take by priority, the echo batch, its completions) is timed, and so is
//    snapshot() with a full config history (1,000 entries).
#include "scheduler_bench.h"

#include "engine/config/config_json.h"
#include "engine/core/histogram.h"
#include "engine/exec/engine.h"

#include <atomic>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <thread>

namespace bp::bench {

namespace {

struct Figures {
    std::uint64_t submitted = 0, completed = 0, rejected = 0;
    double seconds = 0;
    LatencyHistogram overhead;
    double meanBatch = 0;
};

// Per-producer histograms (merged at the end) keep the completion path free
// of shared locks beyond the engine's own.
// Where the overhead goes, per batch: policy time -> dispatch (scheduler
// lateness) and dispatch -> execution start (hand-off to an executor).
class BatchTimes : public EngineObserver {
public:
    void onBatchCompleted(const BatchRecord &b, std::span<const RequestRecord>) override
    {
        std::lock_guard lock(m_mutex);
        lateness.record((b.dispatchedAt - b.intendedAt).count());
        handoff.record((b.startedAt - b.dispatchedAt).count());
    }
    std::mutex m_mutex;
    LatencyHistogram lateness, handoff;
};

struct Shard {
    std::mutex mutex;
    LatencyHistogram overhead;
};

// --queued N: see the top of the file.
int runQueuedBench(const Args &args, EngineOptions options, std::size_t queued, double duration,
                   double warmup, int length)
{
    const std::size_t batch = std::size_t(options.batching.maxBatchSize);
    options.manualScheduling = true;
    options.batching.queueCapacity = int(std::min<std::size_t>(1'000'000, queued + batch));
    auto created = Engine::create(options);
    if (!created) {
        std::cerr << "batchpilot-bench scheduler: " << created.status().toString() << "\n";
        return 2;
    }
    Engine &engine = **created;
    // A full config history: what snapshot() used to copy every time.
    for (int i = 0; i < 1000; ++i) {
        BatchingConfig c = engine.config();
        c.maxQueueDelay = options.batching.maxQueueDelay + std::chrono::microseconds(1 + i % 2);
        (void)engine.reconfigure(c, "bench");
    }
    (void)engine.reconfigure(options.batching, "bench");
    const std::vector<TokenId> tokens(std::size_t(length), 1);
    std::uint64_t nextPriority = 0;
    auto refill = [&] {
        while (engine.queueDepth() < queued + batch) {
            Request r;
            r.tokens = tokens;
            r.priority = int(nextPriority++ % 4);
            if (!engine.submit(std::move(r), [](Response &&) {}).isOk())
                return false;
        }
        return true;
    };
    LatencyHistogram dispatch, snapshot;
    std::uint64_t dispatches = 0;
    const TimePoint begin = SteadyClock::now();
    const TimePoint measureFrom = begin + fromSeconds(warmup), end = measureFrom + fromSeconds(duration);
    for (TimePoint now = begin; now < end; now = SteadyClock::now()) {
        if (!refill()) {
            std::cerr << "batchpilot-bench scheduler: the engine refused a request while refilling\n";
            return 1;
        }
        const TimePoint t0 = SteadyClock::now();
        const Engine::Step step = engine.runSchedulerOnce();
        const TimePoint t1 = SteadyClock::now();
        if (!step.dispatched) {
            std::cerr << "batchpilot-bench scheduler: no dispatch with a full batch queued\n";
            return 1;
        }
        if (now < measureFrom)
            continue;
        dispatch.record((t1 - t0).count());
        ++dispatches;
        if (dispatches % 16 == 0) {
            const TimePoint s0 = SteadyClock::now();
            (void)engine.snapshot();
            snapshot.record((SteadyClock::now() - s0).count());
        }
    }
    const std::size_t history = engine.snapshot().configHistory.size();
    engine.shutdown(ShutdownMode::Fail);

    auto us = [](const LatencyHistogram &h, double q) { return double(h.quantile(q)) / 1e3; };
    std::printf(
        "batchpilot-bench scheduler  model=builtin:echo policy=%s max_batch=%d mode=queued queued=%zu "
        "priorities=0-3\n",
        std::string(policyName(options.batching.policy)).c_str(), options.batching.maxBatchSize, queued);
    std::printf("  measured %.1f s after %.1f s warm-up: %llu dispatches, config history %zu entries\n",
                duration, warmup, (unsigned long long)dispatches, history);
    std::printf("  dispatch (runSchedulerOnce, µs): p50 %.2f  p90 %.2f  p99 %.2f  max %.1f\n",
                us(dispatch, 0.5), us(dispatch, 0.9), us(dispatch, 0.99), double(dispatch.max()) / 1e3);
    std::printf("  snapshot() (µs): p50 %.2f  p99 %.2f  (%llu calls)\n", us(snapshot, 0.5),
                us(snapshot, 0.99), (unsigned long long)snapshot.count());
    if (args.has("json")) {
        nlohmann::json j{{"stage", "scheduler"},
                         {"mode", "queued"},
                         {"queued", queued},
                         {"config", toJson(options.batching)},
                         {"seconds", duration},
                         {"dispatches", dispatches},
                         {"config_history", history},
                         {"dispatch_us",
                          {{"p50", us(dispatch, 0.5)},
                           {"p90", us(dispatch, 0.9)},
                           {"p99", us(dispatch, 0.99)},
                           {"max", double(dispatch.max()) / 1e3}}},
                         {"snapshot_us", {{"p50", us(snapshot, 0.5)}, {"p99", us(snapshot, 0.99)}}}};
        if (int rc = writeJsonOption(args, j); rc != 0)
            return rc;
    }
    return 0;
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
    const bool saturate = args.has("saturate");
    const double rate = args.num("rate", 50000);
    const int producers = int(args.num("producers", 1));
    const double duration = args.num("duration", 5);
    const double warmup = args.num("warmup", 1);
    const int length = int(args.num("length", 16));
    if (rate <= 0 || producers < 1 || duration <= 0 || warmup < 0 || length < 1) {
        std::cerr
            << "batchpilot-bench scheduler: --rate, --producers, --duration and --length must be positive\n";
        return 2;
    }

    EngineOptions options;
    options.backend = makeEchoBackend();
    auto policy = parsePolicy(args.str("policy", "dynamic"));
    if (!policy) {
        std::cerr << "batchpilot-bench scheduler: unknown policy '" << args.str("policy", "") << "'\n";
        return 2;
    }
    options.batching.policy = *policy;
    options.batching.maxBatchSize = int(args.num("max-batch", 64));
    options.batching.staticBatchSize = options.batching.maxBatchSize;
    options.batching.maxQueueDelay = std::chrono::microseconds(std::int64_t(args.num("delay-us", 100)));
    options.batching.instances = int(args.num("instances", 1));
    options.batching.queueCapacity = int(args.num("queue", 65536));
    options.spin = std::chrono::microseconds(std::int64_t(args.num("spin-us", 150)));
    if (args.has("queued")) {
        const double queued = args.num("queued", 0);
        if (!(queued >= 0 && queued <= 999'000)) {
            std::cerr << "batchpilot-bench scheduler: --queued must be in [0, 999000]\n";
            return 2;
        }
        return runQueuedBench(args, options, std::size_t(queued), duration, warmup, length);
    }
    auto created = Engine::create(options);
    if (!created) {
        std::cerr << "batchpilot-bench scheduler: " << created.status().toString() << "\n";
        return 2;
    }
    Engine &engine = **created;
    auto batchTimes = std::make_shared<BatchTimes>();
    engine.addObserver(batchTimes);

    std::vector<Shard> shards(static_cast<std::size_t>(producers));
    std::atomic<std::uint64_t> completed{0}, submittedMeasured{0}, rejected{0};
    const auto begin = SteadyClock::now();
    const auto measureFrom = begin + fromSeconds(warmup);
    const auto end = measureFrom + fromSeconds(duration);
    const std::vector<TokenId> tokens(std::size_t(length), 1);

    std::vector<std::thread> threads;
    for (int p = 0; p < producers; ++p) {
        threads.emplace_back([&, p] {
            tightenTimerSlack();
            Shard &shard = shards[std::size_t(p)];
            const Duration interval = fromSeconds(double(producers) / rate);
            TimePoint next = begin + fromSeconds(double(p) / rate);
            for (;;) {
                TimePoint now = SteadyClock::now();
                if (now >= end)
                    break;
                if (!saturate && now < next) {
                    // Sleep, don't spin: the producer must not steal the
                    // engine's core. Late wake-ups only bunch arrivals; the
                    // overhead is measured from the actual submit time.
                    std::this_thread::sleep_until(next);
                    now = SteadyClock::now();
                }
                next += interval;
                const bool measured = now >= measureFrom;
                Request r;
                r.tokens = tokens;
                const TimePoint submitAt = SteadyClock::now();
                Status s = engine.submit(std::move(r), [&, submitAt, measured](Response &&resp) {
                    const TimePoint done = SteadyClock::now();
                    if (!measured || !resp.status.isOk())
                        return;
                    const Duration overhead = (done - submitAt) - resp.timing.intendedWait;
                    {
                        std::lock_guard lock(shard.mutex);
                        shard.overhead.record(overhead.count());
                    }
                    completed.fetch_add(1, std::memory_order_relaxed);
                });
                if (!s.isOk()) {
                    if (measured)
                        rejected.fetch_add(1, std::memory_order_relaxed);
                    if (saturate)
                        std::this_thread::yield();
                } else if (measured) {
                    submittedMeasured.fetch_add(1, std::memory_order_relaxed);
                }
            }
        });
    }
    for (auto &t : threads)
        t.join();
    const Snapshot snap = engine.snapshot();
    engine.shutdown(ShutdownMode::Drain);
    const double seconds = toSeconds(end - measureFrom);

    Figures f;
    for (auto &s : shards)
        f.overhead.merge(s.overhead);
    f.completed = completed.load();
    f.submitted = submittedMeasured.load();
    f.rejected = rejected.load();
    f.seconds = seconds;
    f.meanBatch = snap.meanBatchSizeAll;

    const double achieved = double(f.completed) / seconds;
    auto us = [&](double q) { return double(f.overhead.quantile(q)) / 1e3; };
    std::printf(
        "batchpilot-bench scheduler  model=builtin:echo policy=%s max_batch=%d delay=%s producers=%d %s\n",
        std::string(policyName(options.batching.policy)).c_str(), options.batching.maxBatchSize,
        formatDuration(options.batching.maxQueueDelay).c_str(), producers,
        saturate ? "mode=saturate" : ("target_rate=" + std::to_string(int(rate)) + "/s").c_str());
    std::printf("  measured %.1f s after %.1f s warm-up, spin %s\n", seconds, warmup,
                formatDuration(options.spin).c_str());
    std::printf("  completed %llu  rejected %llu  achieved %.0f req/s  mean batch %.1f\n",
                (unsigned long long)f.completed, (unsigned long long)f.rejected, achieved, f.meanBatch);
    std::printf("  overhead per request (µs): p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.1f\n", us(0.5),
                us(0.9), us(0.99), us(0.999), double(f.overhead.max()) / 1e3);

    auto bus = [](const LatencyHistogram &h, double q) { return double(h.quantile(q)) / 1e3; };
    std::printf(
        "  per batch (µs): scheduler lateness p50 %.2f p99 %.2f | hand-off to executor p50 %.2f p99 %.2f\n",
        bus(batchTimes->lateness, 0.5), bus(batchTimes->lateness, 0.99), bus(batchTimes->handoff, 0.5),
        bus(batchTimes->handoff, 0.99));

    if (args.has("json")) {
        nlohmann::json j{
            {"stage", "scheduler"},
            {"mode", saturate ? "saturate" : "paced"},
            {"config", toJson(options.batching)},
            {"producers", producers},
            {"spin_us", toMicros(options.spin)},
            {"target_rate", saturate ? 0.0 : rate},
            {"seconds", seconds},
            {"completed", f.completed},
            {"rejected", f.rejected},
            {"achieved_rate", achieved},
            {"mean_batch_size", f.meanBatch},
            {"scheduler_lateness_us",
             {{"p50", bus(batchTimes->lateness, 0.5)}, {"p99", bus(batchTimes->lateness, 0.99)}}},
            {"handoff_us", {{"p50", bus(batchTimes->handoff, 0.5)}, {"p99", bus(batchTimes->handoff, 0.99)}}},
            {"overhead_us",
             {{"p50", us(0.5)},
              {"p90", us(0.9)},
              {"p99", us(0.99)},
              {"p999", us(0.999)},
              {"max", double(f.overhead.max()) / 1e3}}}};
        if (int rc = writeJsonOption(args, j); rc != 0)
            return rc;
    }
    return 0;
}

} // namespace bp::bench
