#include "scheduler_run.h"

#include <atomic>
#include <mutex>
#include <thread>

namespace bp::bench {

namespace {

const char *const kPrefix = "batchpilot-bench scheduler: ";

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

// Per-producer histograms (merged at the end) keep the completion path free
// of shared locks beyond the engine's own.
struct Shard {
    std::mutex mutex;
    LatencyHistogram overhead;
};

struct Counters {
    std::atomic<std::uint64_t> completed{0}, submittedMeasured{0}, rejected{0};
};

// One producer of the paced (or saturated) mode: submits until `end`,
// counting what was submitted from `measureFrom` on.
void produce(Engine &engine, const SchedulerBenchOptions &o, int p, TimePoint begin, TimePoint measureFrom,
             TimePoint end, Shard &shard, Counters &counters)
{
    tightenTimerSlack();
    const std::vector<TokenId> tokens(std::size_t(o.length), 1);
    const Duration interval = fromSeconds(double(o.producers) / o.rate);
    TimePoint next = begin + fromSeconds(double(p) / o.rate);
    for (;;) {
        TimePoint now = SteadyClock::now();
        if (now >= end)
            break;
        if (!o.saturate && now < next) {
            // Sleep, don't spin: the producer must not steal the engine's
            // core. Late wake-ups only bunch arrivals; the overhead is
            // measured from the actual submit time.
            std::this_thread::sleep_until(next);
            now = SteadyClock::now();
        }
        next += interval;
        const bool measured = now >= measureFrom;
        Request r;
        r.tokens = tokens;
        const TimePoint submitAt = SteadyClock::now();
        Status s = engine.submit(std::move(r), [&shard, &counters, submitAt, measured](Response &&resp) {
            const TimePoint done = SteadyClock::now();
            if (!measured || !resp.status.isOk())
                return;
            const Duration overhead = (done - submitAt) - resp.timing.intendedWait;
            {
                std::lock_guard lock(shard.mutex);
                shard.overhead.record(overhead.count());
            }
            counters.completed.fetch_add(1, std::memory_order_relaxed);
        });
        if (!s.isOk()) {
            if (measured)
                counters.rejected.fetch_add(1, std::memory_order_relaxed);
            if (o.saturate)
                std::this_thread::yield();
        } else if (measured) {
            counters.submittedMeasured.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

// A full config history: what snapshot() used to copy every time.
void fillConfigHistory(Engine &engine, const BatchingConfig &config)
{
    for (int i = 0; i < 1000; ++i) {
        BatchingConfig c = engine.config();
        c.maxQueueDelay = config.maxQueueDelay + std::chrono::microseconds(1 + i % 2);
        (void)engine.reconfigure(c, "bench");
    }
    (void)engine.reconfigure(config, "bench");
}

} // namespace

StageResult<PacedFigures> runPaced(const SchedulerBenchOptions &o)
{
    auto created = Engine::create(o.engine);
    if (!created)
        return StageError{2, kPrefix + created.status().toString()};
    Engine &engine = **created;
    auto batchTimes = std::make_shared<BatchTimes>();
    engine.addObserver(batchTimes);

    std::vector<Shard> shards(static_cast<std::size_t>(o.producers));
    Counters counters;
    const auto begin = SteadyClock::now();
    const auto measureFrom = begin + fromSeconds(o.warmup);
    const auto end = measureFrom + fromSeconds(o.duration);
    std::vector<std::thread> threads;
    for (int p = 0; p < o.producers; ++p)
        threads.emplace_back(
            [&, p] { produce(engine, o, p, begin, measureFrom, end, shards[std::size_t(p)], counters); });
    for (auto &t : threads)
        t.join();
    const Snapshot snap = engine.snapshot();
    engine.shutdown(ShutdownMode::Drain);

    PacedFigures f;
    for (auto &s : shards)
        f.overhead.merge(s.overhead);
    f.completed = counters.completed.load();
    f.submitted = counters.submittedMeasured.load();
    f.rejected = counters.rejected.load();
    f.seconds = toSeconds(end - measureFrom);
    f.meanBatch = snap.meanBatchSizeAll;
    f.lateness = batchTimes->lateness;
    f.handoff = batchTimes->handoff;
    return f;
}

StageResult<QueuedFigures> runQueued(const SchedulerBenchOptions &o)
{
    const std::size_t queued = o.queued.value_or(0);
    EngineOptions options = o.engine;
    const std::size_t batch = std::size_t(options.batching.maxBatchSize);
    options.manualScheduling = true;
    options.batching.queueCapacity = int(std::min<std::size_t>(1'000'000, queued + batch));
    auto created = Engine::create(options);
    if (!created)
        return StageError{2, kPrefix + created.status().toString()};
    Engine &engine = **created;
    fillConfigHistory(engine, options.batching);
    const std::vector<TokenId> tokens(std::size_t(o.length), 1);
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
    QueuedFigures f;
    f.config = options.batching;
    const TimePoint begin = SteadyClock::now();
    const TimePoint measureFrom = begin + fromSeconds(o.warmup), end = measureFrom + fromSeconds(o.duration);
    for (TimePoint now = begin; now < end; now = SteadyClock::now()) {
        if (!refill())
            return StageError{1, kPrefix + std::string("the engine refused a request while refilling")};
        const TimePoint t0 = SteadyClock::now();
        const Engine::Step step = engine.runSchedulerOnce();
        const TimePoint t1 = SteadyClock::now();
        if (!step.dispatched)
            return StageError{1, kPrefix + std::string("no dispatch with a full batch queued")};
        if (now < measureFrom)
            continue;
        f.dispatch.record((t1 - t0).count());
        ++f.dispatches;
        if (f.dispatches % 16 == 0) {
            const TimePoint s0 = SteadyClock::now();
            (void)engine.snapshot();
            f.snapshot.record((SteadyClock::now() - s0).count());
        }
    }
    f.configHistory = engine.snapshot().configHistory.size();
    engine.shutdown(ShutdownMode::Fail);
    return f;
}

} // namespace bp::bench
