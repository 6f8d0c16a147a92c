#include "simulator.h"

#include "engine/exec/engine_core.h"
#include "engine/sched/continuous_scheduler.h"
#include "engine/sched/server_models/step_books.h"

#include <algorithm>

namespace bp {

struct Simulator::Impl final : ExecutorDriver {
    // A unit on a virtual executor: its model call ends at run.end (it is
    // then handed back and its requests complete, as the engine's executor
    // does right after the model returns); the executor is free at `free`,
    // after the serving overhead.
    struct Running {
        WorkUnit unit;
        UnitRun run;
        TimePoint free{};
        bool finished = false;
        TimePoint nextEvent() const { return finished ? free : run.end; }
    };

    // The config history's changes after the first, for SimOutcome.
    struct ChangeCounter final : EngineObserver {
        std::size_t changes = 0;
        void onConfigChanged(const ConfigChange &) override { ++changes; }
    };

    const SimulatorOptions &o;
    VirtualClock clock;
    NoiseDraws noise;
    std::shared_ptr<CostBackend> backend;
    EngineCore core;
    std::shared_ptr<ChangeCounter> changes = std::make_shared<ChangeCounter>();
    std::vector<bool> busy;
    std::vector<TimePoint> idleSince; // per executor: when it last became free
    // Units in flight; by pointer, so that sorting them moves no unit.
    std::vector<std::unique_ptr<Running>> running;
    std::optional<TimePoint> wakeAt; // the scheduler's next decision time, when an executor is free
    TimePoint now;
    bool draining = false;
    SimOutcome out;

    explicit Impl(const SimulatorOptions &options)
        : o(options), clock(options.start), noise(options.costNoise, options.noiseSeed),
          backend(std::make_shared<CostBackend>(options.cost, clock, noise, options.limits, options.output,
                                                options.positions)),
          core(options.config, backend, clock, *this),
          busy(std::size_t(std::max(1, options.config.instances)), false),
          idleSince(busy.size(), TimePoint::min()), now(options.start)
    {
        core.addObserver(changes);
        if (o.observer) // not owned: the caller keeps it alive across run()
            core.addObserver(std::shared_ptr<EngineObserver>(o.observer, [](EngineObserver *) {}));
    }

    // ExecutorDriver: the event loop decides after every event anyway.
    bool pokeLocked() override { return false; }
    void wake() override {}
    void instancesChangedLocked(int instances) override
    {
        // Executors past the new count finish what they run and are not used again.
        const auto n = std::size_t(std::max(1, instances));
        if (n > busy.size()) {
            busy.resize(n, false);
            idleSince.resize(n, TimePoint::min());
        }
        m_instances = n;
    }
    std::size_t m_instances = busy.size();

    // The scheduler lateness charged to a unit `executor` starts now: none
    // when it only just became free (the engine's leader goes straight on to
    // the next unit), else its wake-up (CostModel::dispatchLateness).
    Duration lateness(int executor)
    {
        if (o.cost.dispatchLateness.empty() || idleSince[std::size_t(executor)] >= now)
            return Duration::zero();
        switch (o.costNoise) {
        case CostNoise::None: return fromSeconds(o.cost.latenessAt(0.5));
        case CostNoise::Mean: return fromSeconds(o.cost.meanLateness());
        case CostNoise::Drawn: return fromSeconds(o.cost.latenessAt(noise.uniform()));
        }
        return Duration::zero();
    }

    int freeExecutor() const
    {
        for (std::size_t i = 0; i < m_instances; ++i)
            if (!busy[i])
                return int(i);
        return -1;
    }

    void submit(const SimArrival &a, std::size_t index)
    {
        Request r;
        r.id = a.id ? a.id : index + 1;
        r.tokens.resize(std::size_t(std::max(0, a.inputTokens)));
        if (o.config.cache.enabled) // distinct contents: a trace's prompts do not repeat
            for (std::size_t k = 0; k < r.tokens.size(); ++k)
                r.tokens[k] = TokenId((r.id * 2654435761u + k) % std::uint64_t(o.limits.vocabSize));
        r.maxNewTokens = a.maxNewTokens;
        r.arrival = now;
        r.priority = a.priority;
        if (a.timeout)
            r.deadline = now + *a.timeout;
        ++out.submitted;
        clock.set(now);
        const Status s = core.submit(std::move(r), [this](Response &&response) {
            ++(response.status.isOk() ? out.completed : out.failed);
        });
        ++(s.isOk() ? out.accepted : out.rejected);
    }

    // The engine's executor starts `unit` now, late by its wake-up: the
    // model call runs on the virtual clock, which the cost backend advances
    // by the unit's charged cost.
    void start(WorkUnit &&unit, int executor)
    {
        const Duration late = lateness(executor);
        unit.delayDispatch(late); // the engine's clock reads the late dispatch
        backend->setConcurrentUnits(1 + int(std::count(busy.begin(), busy.end(), true)));
        clock.set(now + late);
        UnitRun run = core.run(unit, executor);
        clock.set(now);
        const bool step = unit.isStep();
        auto r = std::make_unique<Running>(Running{std::move(unit), std::move(run)});
        r->free = r->run.end + fromSeconds(step ? o.cost.stepOverhead() : o.cost.overheadS);
        busy[std::size_t(executor)] = true;
        running.push_back(std::move(r));
        ++out.batches;
    }

    std::optional<TimePoint> nextCompletion() const
    {
        std::optional<TimePoint> t;
        for (const auto &r : running)
            if (!t || r->nextEvent() < *t)
                t = r->nextEvent();
        return t;
    }

    void completeDue()
    {
        // In event order (ties by executor), as the executors would finish.
        std::sort(running.begin(), running.end(), [](const auto &a, const auto &b) {
            return a->nextEvent() != b->nextEvent() ? a->nextEvent() < b->nextEvent()
                                                    : a->run.executor < b->run.executor;
        });
        for (const auto &p : running) {
            Running &r = *p;
            if (r.nextEvent() > now)
                break;
            if (!r.finished) {
                clock.set(r.run.end);
                core.finish(r.unit, r.run);
                r.finished = true;
                out.end = std::max(out.end, r.unit.isStep() ? r.run.end : r.free);
            }
            if (r.free <= now) {
                busy[std::size_t(r.run.executor)] = false;
                idleSince[std::size_t(r.run.executor)] = r.free;
            }
        }
        std::erase_if(running, [&](const auto &r) { return r->finished && r->free <= now; });
        clock.set(now);
    }

    // The leader's part of the engine loop: while an executor is free, the
    // engine decides (EngineCore::decide, the same call its threads make).
    void dispatchReady()
    {
        for (;;) {
            const int executor = freeExecutor();
            if (executor < 0) {
                wakeAt.reset(); // no leader: the next decision comes with a free executor
                return;
            }
            clock.set(now);
            EngineCore::Decision d;
            {
                MutexLock lock(core.mutex());
                d = core.decide();
            }
            if (d.unit) {
                start(std::move(*d.unit), executor);
                continue;
            }
            wakeAt = d.wakeAt;
            if (wakeAt && *wakeAt <= now)
                wakeAt = now + Duration(1); // never the same instant again
            return;
        }
    }

    void moveTo(TimePoint t, TimePoint &nextSample)
    {
        if (o.onSample && o.samplePeriod > Duration::zero())
            while (nextSample <= t) {
                now = std::max(now, nextSample);
                clock.set(now);
                o.onSample(core.snapshot());
                nextSample += o.samplePeriod;
            }
        now = std::max(now, t);
        clock.set(now);
    }

    void stop(ShutdownMode mode)
    {
        std::vector<Pending> rest;
        {
            MutexLock lock(core.mutex());
            rest = core.stopLocked(mode);
        }
        core.fail(rest, StatusCode::ShuttingDown, "engine shut down before the request ran");
    }

    void run(std::span<const SimArrival> arrivals)
    {
        if (o.observer)
            o.observer->onConfigChanged({o.start, 1, "initial", "start", o.config});
        TimePoint nextSample = o.start + o.samplePeriod;
        std::size_t i = 0;
        for (;;) {
            if (i < arrivals.size() && o.cancel && o.cancel->load(std::memory_order_relaxed)) {
                out.cancelled = true;
                break;
            }
            const std::optional<TimePoint> arrival =
                i < arrivals.size() ? std::optional(o.start + arrivals[i].offset) : std::nullopt;
            const std::optional<TimePoint> done = nextCompletion();
            const std::optional<TimePoint> wakeUp = freeExecutor() >= 0 ? wakeAt : std::nullopt;
            std::optional<TimePoint> next;
            for (const auto &t : {arrival, done, wakeUp})
                if (t && (!next || *t < *next))
                    next = t;
            if (!next) {
                if (core.queueDepth() == 0)
                    break;
                if (draining) {
                    // decide() fails what a draining policy will not run;
                    // whatever is still held could never run.
                    std::vector<Pending> rest;
                    {
                        MutexLock lock(core.mutex());
                        rest = core.takeAllLocked();
                    }
                    core.fail(rest, StatusCode::ShuttingDown, "engine shut down before the request ran");
                    break;
                }
                // Every arrival is in and the policy plans nothing more: the
                // engine shuts down (Drain), partial batches may leave.
                draining = true;
                stop(ShutdownMode::Drain);
                dispatchReady();
                continue;
            }
            moveTo(*next, nextSample);
            if (done && *done <= now) {
                completeDue();
            } else if (arrival && *arrival <= now) {
                submit(arrivals[i], i);
                ++i;
                if (o.onProgress && i % o.progressEvery == 0)
                    o.onProgress(out);
            }
            dispatchReady();
        }
        if (out.cancelled) {
            stop(ShutdownMode::Fail); // queued requests fail; units in flight finish
            while (!running.empty()) {
                moveTo(*nextCompletion(), nextSample);
                completeDue();
            }
            // continuous: sequences that were running when the last step ended
            std::vector<Pending> left;
            {
                MutexLock lock(core.mutex());
                left = core.takeAllLocked();
            }
            core.fail(left, StatusCode::ShuttingDown, "engine shut down before the request ran");
        }
        {
            MutexLock lock(core.mutex());
            if (const auto *c = dynamic_cast<const ContinuousScheduler *>(&core.schedulerLocked()))
                out.preemptions = c->preemptions();
            else if (const auto *m = dynamic_cast<const StepBooks *>(&core.schedulerLocked()))
                out.preemptions = m->preemptions(); // a server model's (vLLM, SGLang)
        }
        out.configChanges = changes->changes;
        clock.set(now);
        out.last = core.snapshot();
        if (o.onSample)
            o.onSample(out.last);
    }
};

Simulator::Simulator(SimulatorOptions options) : m_options(std::move(options)) {}

SimOutcome Simulator::run(std::span<const SimArrival> arrivals)
{
    Impl impl(m_options);
    impl.run(arrivals);
    return std::move(impl.out);
}

} // namespace bp
