#include "simulator.h"

#include "engine/adaptive.h"
#include "engine/config_history.h"
#include "engine/continuous_scheduler.h"
#include "engine/metrics.h"
#include "engine/outcome.h"

#include <algorithm>
#include <functional>
#include <random>
#include <unordered_map>

namespace bp {

namespace {

RequestRecord recordOf(const Request &r)
{
    RequestRecord rec;
    rec.id = r.id;
    rec.arrival = r.arrival;
    rec.inputTokens = int(r.tokens.size());
    rec.priority = r.priority;
    return rec;
}

// The model behind a simulated `continuous` run: computes nothing. It keeps
// each live sequence's cached length, as the real one keeps its KV cache,
// so that it can say what each step fed and attended to (lastShape(), which
// the cost model prices), refuses what the real decoder refuses (input +
// generated past its positions), and answers every sampled token with 0.
class CostedStepModel final : public StepModel {
public:
    explicit CostedStepModel(int positions) : m_positions(positions) {}

    Status step(const std::vector<StepItem> &items, std::vector<StepOutcome> &out) override
    {
        out.assign(items.size(), StepOutcome{});
        if (Status s = checkDistinctSequences(items); !s)
            return s;
        m_last = {};
        for (std::size_t i = 0; i < items.size(); ++i) {
            const auto fed = std::int64_t(items[i].tokens.size());
            const auto it = m_lengths.find(items[i].sequence);
            const std::int64_t cached = it != m_lengths.end() ? it->second : 0;
            if (m_positions > 0 && cached + fed > m_positions) {
                out[i].status = {StatusCode::OutOfRange, "the sequence would pass the model's " +
                                                             std::to_string(m_positions) + " positions"};
                continue;
            }
            m_last.add(cached, fed);
            m_lengths[items[i].sequence] = cached + fed;
            m_cached += fed;
        }
        return Status::ok();
    }
    void release(std::uint64_t sequence) override
    {
        if (const auto it = m_lengths.find(sequence); it != m_lengths.end()) {
            m_cached -= it->second;
            m_lengths.erase(it);
        }
    }
    std::int64_t cachedTokens() const override { return m_cached; }
    // What the last step() ran.
    const StepShape &lastShape() const { return m_last; }

private:
    int m_positions = 0;
    std::unordered_map<std::uint64_t, std::int64_t> m_lengths;
    std::int64_t m_cached = 0;
    StepShape m_last;
};

} // namespace

struct Simulator::Impl {
    struct Running {
        TimePoint end{}; // the executor is free again (after the serving overhead)
        int executor = 0;
        BatchRecord batch;
        std::vector<RequestRecord> records;
        // A generation step (policy continuous): it is handed back to the
        // scheduler when the model returns (`computed`), as the engine does,
        // and its executor is free at `end`.
        std::shared_ptr<StepWork> step;
        std::vector<StepOutcome> outcomes;
        Status stepStatus;
        TimePoint started{}, computed{};
        bool handedBack = false;
        TimePoint nextEvent() const { return step && !handedBack ? computed : end; }
    };

    const SimulatorOptions &o;
    BatchingConfig current;
    std::uint64_t version = 1;
    CostedStepModel stepModel;
    std::unique_ptr<Scheduler> scheduler;
    Scheduler &batcher; // *scheduler: a Batcher, or the ContinuousScheduler for `continuous`
    std::mt19937_64 noise;
    std::uniform_real_distribution<double> unit{0.0, 1.0};
    MetricsRecorder metrics;
    SloController slo;
    std::vector<bool> busy;
    std::vector<TimePoint> idleSince; // per executor: when it last became free
    std::vector<Running> running;
    std::optional<TimePoint> wake;
    TimePoint now;
    bool draining = false;
    SimOutcome out;

    explicit Impl(const SimulatorOptions &options)
        : o(options), current(options.config), stepModel(options.positions),
          scheduler(makeScheduler(options.config, options.limits, &stepModel)), batcher(*scheduler),
          noise(options.noiseSeed), metrics(options.start),
          busy(std::size_t(std::max(1, options.config.instances)), false),
          idleSince(busy.size(), TimePoint::min()), now(options.start)
    {
    }

    // The cost of a unit the model predicts `seconds` for, as charged
    // (SimulatorOptions::costNoise).
    Duration charge(double seconds, bool iteration)
    {
        switch (o.costNoise) {
        case CostNoise::None: break;
        case CostNoise::Mean: seconds *= o.cost.meanResidual(iteration); break;
        case CostNoise::Drawn: seconds *= o.cost.residualAt(unit(noise), iteration); break;
        }
        return fromSeconds(std::max(0.0, seconds));
    }

    // The scheduler lateness charged to a unit `executor` starts now: none
    // when it only just became free (the engine's leader goes straight on to
    // the next batch), else its wake-up (CostModel::dispatchLateness).
    Duration lateness(int executor)
    {
        if (o.cost.dispatchLateness.empty() || idleSince[std::size_t(executor)] >= now)
            return Duration::zero();
        switch (o.costNoise) {
        case CostNoise::None: return fromSeconds(o.cost.latenessAt(0.5));
        case CostNoise::Mean: return fromSeconds(o.cost.meanLateness());
        case CostNoise::Drawn: return fromSeconds(o.cost.latenessAt(unit(noise)));
        }
        return Duration::zero();
    }

    int freeExecutor() const
    {
        for (std::size_t i = 0; i < busy.size(); ++i)
            if (!busy[i])
                return int(i);
        return -1;
    }

    void fail(Pending &p, StatusCode code)
    {
        metrics.recordFailure(code);
        ++out.failed;
        if (o.observer) {
            RequestRecord rec = recordOf(p.request);
            rec.status = code;
            rec.total = rec.queueWait = now - p.request.arrival;
            rec.bucket = current.bucketFor(rec.inputTokens);
            o.observer->onRequestFailed(rec);
        }
    }

    void admit(const SimArrival &a, std::size_t index)
    {
        Pending p;
        p.request.id = a.id ? a.id : index + 1;
        p.request.tokens.assign(std::size_t(std::max(0, a.inputTokens)), 0);
        p.request.maxNewTokens = a.maxNewTokens;
        p.request.arrival = now;
        p.request.priority = a.priority;
        if (a.timeout)
            p.request.deadline = now + *a.timeout;
        ++out.submitted;
        if (Status s = batcher.admit(p, now); !s) {
            ++out.rejected;
            metrics.recordFailure(s.code());
            if (o.observer) {
                RequestRecord rec = recordOf(p.request);
                rec.status = s.code();
                o.observer->onRequestFailed(rec);
            }
            return;
        }
        ++out.accepted;
    }

    int outputTokens(const Request &r) const
    {
        switch (o.output) {
        case OutputKind::None: return 0;
        case OutputKind::Echo:
            // builtin:echo: max_new_tokens n > 0 generates n tokens, 0 returns the input
            return r.maxNewTokens > 0 ? r.maxNewTokens : int(r.tokens.size());
        case OutputKind::Generated: return std::max(1, r.maxNewTokens);
        }
        return 0;
    }

    // Engine::execute without the model: the batch runs on `executor` from
    // now for its predicted cost; its records are built now and delivered
    // when it ends.
    void start(Batch &batch, int executor)
    {
        batch.dispatchedAt += lateness(executor); // the engine's clock reads the late dispatch
        const std::size_t n = batch.items.size();
        std::vector<int> wants;
        std::vector<bool> runs(n, true);
        int longest = 0, ran = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const Request &r = batch.items[i].request;
            if (o.output == OutputKind::Generated && o.positions > 0 &&
                int(r.tokens.size()) + std::max(1, r.maxNewTokens) > o.positions) {
                runs[i] = false; // the decoder refuses it; the rest run
                continue;
            }
            wants.push_back(r.maxNewTokens);
            longest = std::max(longest, int(r.tokens.size()));
            ++ran;
        }
        const int padded = std::max(batch.paddedLength, longest);
        const CostModel::BatchCost cost =
            ran > 0 ? o.cost.batchCost(ran, padded, wants) : CostModel::BatchCost{};
        // The engine's clock reads: start after the hand-off, end after run().
        const Duration overhead = fromSeconds(o.cost.overheadS);
        const TimePoint started = batch.dispatchedAt;
        // contention: the executors already busy and this one
        const int units = 1 + int(std::count(busy.begin(), busy.end(), true));
        const Duration charged =
            ran > 0 ? charge(toSeconds(cost.run) * o.cost.slowdownAt(units), false) : Duration::zero();
        const TimePoint ended = started + charged;

        Running r;
        r.end = ended + overhead;
        r.executor = executor;
        r.batch = batchRecordOf(batch, started, ended, GuardedRun{}, executor);
        const BatchRecord &br = r.batch;
        r.records.resize(n);
        // The charged run scales every predicted token time alike.
        auto scaled = [&](Duration d) {
            return cost.run > Duration::zero()
                       ? Duration(std::int64_t(double(d.count()) *
                                               (double(charged.count()) / double(cost.run.count()))))
                       : d;
        };
        std::size_t member = 0; // index of a running member in `wants` and cost.lastToken
        for (std::size_t i = 0; i < n; ++i) {
            const Request &req = batch.items[i].request;
            RequestRecord &rec = r.records[i];
            rec = recordOf(req);
            rec.queueWait = batch.dispatchedAt - req.arrival;
            rec.compute = br.compute;
            rec.total = ended - req.arrival;
            rec.bucket = batch.bucket;
            rec.batchId = batch.id;
            if (runs[i]) {
                const std::size_t k = member++;
                rec.outputTokens = outputTokens(req);
                if (cost.firstToken > Duration::zero() && rec.outputTokens > 0) {
                    // the prefill's share of the charged run; TPOT from the
                    // member's own last token, as the engine reports it
                    const Duration first = scaled(cost.firstToken);
                    rec.timeToFirstToken = (started - req.arrival) + first;
                    if (k < cost.lastToken.size())
                        rec.timePerOutputToken = timePerOutputToken(first, scaled(cost.lastToken[k]),
                                                                    std::size_t(rec.outputTokens));
                    if (rec.timePerOutputToken > Duration::zero())
                        rec.interTokenLatencies.assign(std::size_t(rec.outputTokens - 1),
                                                       rec.timePerOutputToken);
                }
                rec.status = StatusCode::Ok;
            } else {
                rec.status = StatusCode::OutOfRange;
            }
        }
        busy[std::size_t(executor)] = true;
        running.push_back(std::move(r));
        ++out.batches;
    }

    void finish(Running &r)
    {
        metrics.recordBatch(r.batch, r.records, r.end - fromSeconds(o.cost.overheadS));
        for (const RequestRecord &rec : r.records) {
            if (rec.status == StatusCode::Ok) {
                slo.observe(rec.total);
                ++out.completed;
            } else {
                ++out.failed;
            }
        }
        if (o.observer)
            o.observer->onBatchCompleted(r.batch, r.records);
        busy[std::size_t(r.executor)] = false;
        idleSince[std::size_t(r.executor)] = r.end;
        out.end = std::max(out.end, r.end);
    }

    // Engine::executeStep without the model: StepModel::step runs now (it
    // computes nothing; it tells the shape the cost model prices) and its
    // outcome is handed back when the predicted time has passed.
    void startStep(std::shared_ptr<StepWork> step, int executor)
    {
        Running r;
        r.executor = executor;
        r.stepStatus = stepModel.step(step->items, r.outcomes);
        step->dispatchedAt += lateness(executor);
        r.started = step->dispatchedAt;
        r.computed = now + charge(o.cost.iterationSeconds(stepModel.lastShape()), true);
        r.end = r.computed + fromSeconds(o.cost.stepOverhead());
        r.step = std::move(step);
        busy[std::size_t(executor)] = true;
        running.push_back(std::move(r));
        ++out.batches;
    }

    // The step's end, under the engine lock: the scheduler advances its
    // sequences; the records go out as the engine sends them.
    void handBack(Running &r)
    {
        r.handedBack = true;
        StepDone done;
        batcher.finished(*r.step, r.stepStatus, r.outcomes, r.computed, done);
        r.batch = stepRecordOf(*r.step, r.started, r.computed, r.stepStatus, r.executor);
        r.records.clear();
        for (std::size_t i = 0; i < done.done.size(); ++i) {
            RequestRecord rec = completedRecord(done.done[i].request, done.responses[i], r.step->id);
            rec.priority = done.done[i].request.priority;
            if (rec.status == StatusCode::Ok) {
                slo.observe(rec.total);
                ++out.completed;
            } else {
                ++out.failed;
            }
            r.records.push_back(rec);
        }
        metrics.recordBatch(r.batch, r.records, r.computed);
        if (o.observer)
            o.observer->onBatchCompleted(r.batch, r.records);
        out.end = std::max(out.end, r.computed);
    }

    std::optional<TimePoint> nextCompletion() const
    {
        std::optional<TimePoint> t;
        for (const Running &r : running)
            if (!t || r.nextEvent() < *t)
                t = r.nextEvent();
        return t;
    }

    void completeDue()
    {
        // In event order (ties by executor), as the executors would finish.
        std::sort(running.begin(), running.end(), [](const Running &a, const Running &b) {
            return a.nextEvent() != b.nextEvent() ? a.nextEvent() < b.nextEvent() : a.executor < b.executor;
        });
        for (Running &r : running) {
            if (r.nextEvent() > now)
                break;
            if (r.step && !r.handedBack)
                handBack(r);
            if (r.end <= now) {
                if (r.step) {
                    busy[std::size_t(r.executor)] = false;
                    idleSince[std::size_t(r.executor)] = r.end;
                } else
                    finish(r);
            }
        }
        std::erase_if(running, [&](const Running &r) { return r.end <= now && (!r.step || r.handedBack); });
    }

    void applySlo()
    {
        auto adjustment = slo.evaluate(current, now);
        if (!adjustment || adjustment->config == current)
            return;
        if (Status s = validate(adjustment->config); !s)
            return; // the engine refuses it too (and says so on stderr)
        if (!sameSchedulerKind(current, adjustment->config))
            return; // the controller changes delays, never the kind of scheduler
        const BatchingConfig before = current;
        current = adjustment->config;
        ++version;
        batcher.reconfigure(current, version);
        if (before.queueCount() != current.queueCount() || before.policy != current.policy ||
            before.bucketEdges != current.bucketEdges || before.hybrid != current.hybrid)
            metrics.resetQueues();
        ++out.configChanges;
        if (o.observer)
            o.observer->onConfigChanged({now, version,
                                         adjustment->reason + ": " + describeChange(before, current),
                                         "slo-controller", current});
    }

    // The leader's part of the engine loop: while an executor is free, ask
    // the policy. This is the one place that decides what runs next (the
    // extension point for an iteration-level scheduler).
    void dispatchReady()
    {
        for (;;) {
            const int executor = freeExecutor();
            if (executor < 0) {
                wake.reset(); // no leader: the next poll comes with a free executor
                return;
            }
            applySlo();
            Scheduler::Poll poll = batcher.poll(now, draining, true);
            for (Pending &p : poll.expired)
                fail(p, StatusCode::DeadlineExceeded);
            for (Scheduler::Failure &f : poll.failed)
                fail(f.pending, f.status.code());
            if (poll.batch) {
                start(*poll.batch, executor);
                continue;
            }
            if (poll.step) {
                startStep(std::move(poll.step), executor);
                continue;
            }
            if (!poll.expired.empty() || !poll.failed.empty())
                continue;
            wake = poll.wakeAt;
            if (wake && *wake <= now)
                wake = now + Duration(1); // never the same instant again
            return;
        }
    }

    Snapshot snapshot() const
    {
        Snapshot s;
        s.config = current;
        s.configVersion = version;
        s.queueDepth = batcher.size();
        s.queueDepths = batcher.depths();
        s.inFlightBatches = int(running.size());
        s.arrivalRate = batcher.arrivalRate(now);
        s.effectiveDelay = batcher.effectiveDelay();
        metrics.fill(s, now);
        metrics.fillQueues(s, current);
        s.takenAt = now;
        s.submitted = out.accepted;
        return s;
    }

    void moveTo(TimePoint t, TimePoint &nextSample)
    {
        if (o.onSample && o.samplePeriod > Duration::zero())
            while (nextSample <= t) {
                now = std::max(now, nextSample);
                o.onSample(snapshot());
                nextSample += o.samplePeriod;
            }
        now = std::max(now, t);
    }

    void run(std::span<const SimArrival> arrivals)
    {
        if (o.observer)
            o.observer->onConfigChanged({o.start, 1, "initial", "start", current});
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
            const std::optional<TimePoint> wakeUp = freeExecutor() >= 0 ? wake : std::nullopt;
            std::optional<TimePoint> next;
            for (const auto &t : {arrival, done, wakeUp})
                if (t && (!next || *t < *next))
                    next = t;
            if (!next) {
                if (batcher.size() == 0)
                    break;
                if (draining) {
                    // Draining and the policy still will not dispatch (static
                    // without flush-on-drain): the rest fails, as in the engine.
                    std::vector<Pending> rest = batcher.takeAll();
                    for (Pending &p : rest)
                        fail(p, StatusCode::ShuttingDown);
                    break;
                }
                // Every arrival is in and the policy plans nothing more: the
                // engine shuts down (Drain), partial batches may leave.
                draining = true;
                dispatchReady();
                continue;
            }
            moveTo(*next, nextSample);
            if (done && *done <= now) {
                completeDue();
            } else if (arrival && *arrival <= now) {
                admit(arrivals[i], i);
                ++i;
                if (o.onProgress && i % o.progressEvery == 0)
                    o.onProgress(out);
            }
            dispatchReady();
        }
        if (out.cancelled) {
            // Engine::shutdown(Fail): queued requests fail, in-flight batches finish.
            std::vector<Pending> rest = batcher.takeAll();
            for (Pending &p : rest)
                fail(p, StatusCode::ShuttingDown);
            while (!running.empty()) {
                moveTo(*nextCompletion(), nextSample);
                completeDue();
            }
            // continuous: sequences that were running when the last step ended
            std::vector<Pending> left = batcher.takeAll();
            for (Pending &p : left)
                fail(p, StatusCode::ShuttingDown);
        }
        if (const auto *c = dynamic_cast<const ContinuousScheduler *>(scheduler.get()))
            out.preemptions = c->preemptions();
        out.last = snapshot();
        if (o.onSample)
            o.onSample(out.last);
    }
};

std::optional<CostNoise> parseCostNoise(std::string_view name)
{
    for (CostNoise n : {CostNoise::None, CostNoise::Mean, CostNoise::Drawn})
        if (costNoiseName(n) == name)
            return n;
    return std::nullopt;
}

std::string_view costNoiseName(CostNoise noise)
{
    switch (noise) {
    case CostNoise::None: return "none";
    case CostNoise::Mean: return "mean";
    case CostNoise::Drawn: return "drawn";
    }
    return "none";
}

Simulator::Simulator(SimulatorOptions options) : m_options(std::move(options)) {}

SimOutcome Simulator::run(std::span<const SimArrival> arrivals)
{
    Impl impl(m_options);
    impl.run(arrivals);
    return std::move(impl.out);
}

} // namespace bp
