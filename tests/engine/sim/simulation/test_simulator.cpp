// The simulator: with a fake cost of known value it reproduces an analytic
// queueing result (M/D/1 at batch 1), models instances, queue capacity,
// deadlines and the drain; and a simulated replay of builtin:echo (zero
// cost) agrees batch for batch and request for request with the virtual
// replay it replaces, under every request-level policy.
#include "engine/replay/replayer.h"
#include "engine/sched/continuous_scheduler.h"
#include "engine/sim/simulation/simulator.h"
#include "engine/sim/tune/sim_interval.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/store/session_summary.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <map>
#include <random>

using namespace bp;
using namespace std::chrono_literals;

namespace {

struct Collector final : EngineObserver {
    std::vector<BatchRecord> batches;
    std::vector<RequestRecord> requests; // completed or failed in a batch
    std::vector<RequestRecord> failed;   // never ran
    std::vector<ConfigChange> changes;
    void onBatchCompleted(const BatchRecord &b, std::span<const RequestRecord> rs) override
    {
        batches.push_back(b);
        requests.insert(requests.end(), rs.begin(), rs.end());
    }
    void onRequestFailed(const RequestRecord &r) override { failed.push_back(r); }
    void onConfigChanged(const ConfigChange &c) override { changes.push_back(c); }
};

CostModel constantCost(Duration d)
{
    CostModel m;
    m.coef[0] = toSeconds(d);
    return m;
}

SimulatorOptions optionsFor(PolicyKind policy, Duration cost, int instances = 1)
{
    SimulatorOptions o;
    o.config.policy = policy;
    o.config.instances = instances;
    o.config.queueCapacity = 1'000'000;
    o.cost = constantCost(cost);
    return o;
}

std::vector<PlannedArrival> together(int n, std::optional<Duration> timeout = std::nullopt)
{
    std::vector<PlannedArrival> a(static_cast<std::size_t>(n));
    for (auto &x : a)
        x.timeout = timeout;
    return a;
}

// Policy continuous with an iteration cost of s0 + s2·tokens.
SimulatorOptions continuousOptions(double s0, double perToken, int maxNumSeqs = 16, int kv = 0)
{
    SimulatorOptions o;
    o.config.policy = PolicyKind::Continuous;
    o.config.queueCapacity = 100000;
    o.config.continuous.maxNumSeqs = maxNumSeqs;
    o.config.continuous.maxNumBatchedTokens = 64;
    o.config.continuous.prefillChunk = 8;
    o.config.continuous.kvCacheTokens = kv;
    o.limits.maxSequenceLength = 2048;
    o.cost.generative = true;
    o.cost.coef[CostModel::kIterationStart] = s0;
    o.cost.coef[CostModel::kIterationStart + 2] = perToken;
    o.output = OutputKind::Generated;
    return o;
}

std::vector<PlannedArrival> sequences(int n, int input, int want)
{
    std::vector<PlannedArrival> a(static_cast<std::size_t>(n));
    for (auto &x : a) {
        x.inputTokens = input;
        x.maxNewTokens = want;
    }
    return a;
}

// The engine's loop over a ContinuousScheduler and echo's StepModel
// (poll when no step is in flight, step, finished), at zero cost, with
// `arrivals` submitted at once (the first step leaves with the first):
// its preemptions.
std::uint64_t enginePreemptions(const BatchingConfig &config, const std::vector<PlannedArrival> &arrivals)
{
    auto echo = makeEchoBackend(256, 2048);
    ContinuousScheduler scheduler(config, echo->info().limits(), *echo->steps());
    const TimePoint now{};
    std::optional<WorkUnit> inFlight;
    for (std::size_t i = 0; i < arrivals.size(); ++i) {
        Pending p;
        p.request.id = i + 1;
        p.request.tokens.assign(std::size_t(arrivals[i].inputTokens), TokenId(i % 200));
        p.request.maxNewTokens = arrivals[i].maxNewTokens;
        p.request.arrival = now;
        if (!scheduler.admit(p, now))
            return 0;
        if (!inFlight)
            inFlight = std::move(scheduler.poll(now, false, true).unit);
    }
    while (inFlight) {
        UnitRun run;
        (void)echo->steps()->step(inFlight->step()->items, run.outcomes);
        UnitDone done;
        scheduler.finished(*inFlight, run, now, done);
        inFlight = std::move(scheduler.poll(now, true, true).unit);
    }
    return scheduler.size() == 0 ? scheduler.preemptions() : 0;
}

} // namespace

class TestSimulator : public QObject {
    Q_OBJECT
private slots:
    // M/D/1: Poisson arrivals at rate λ, one server, deterministic service
    // time 1/μ. Mean wait in queue Wq = ρ / (2μ(1 − ρ)), ρ = λ/μ. 200,000
    // arrivals (seeded): the simulated mean is within 5% of the formula
    // (the sampling error at ρ = 0.8 is about 2%).
    void reproducesMD1_data()
    {
        QTest::addColumn<double>("rho");
        QTest::newRow("rho 0.5") << 0.5;
        QTest::newRow("rho 0.8") << 0.8;
    }
    void reproducesMD1()
    {
        QFETCH(double, rho);
        const double mu = 100; // 10 ms per request
        const double lambda = rho * mu;
        std::mt19937_64 rng(11);
        std::exponential_distribution<double> gap(lambda);
        std::vector<PlannedArrival> arrivals(200'000);
        double t = 0;
        for (auto &a : arrivals) {
            t += gap(rng);
            a.offset = fromSeconds(t);
        }
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::None, 10ms);
        o.observer = &records;
        const SimOutcome out = Simulator(o).run(arrivals);
        QCOMPARE(out.completed, arrivals.size());
        QCOMPARE(out.batches, arrivals.size());
        double sum = 0;
        for (const RequestRecord &r : records.requests) {
            QCOMPARE(r.compute, Duration(10ms));
            QCOMPARE(r.total, r.queueWait + r.compute);
            sum += toSeconds(r.queueWait);
        }
        const double mean = sum / double(records.requests.size());
        const double expected = rho / (2 * mu * (1 - rho));
        QVERIFY2(
            std::abs(mean - expected) / expected < 0.05,
            qPrintable(QStringLiteral("mean wait %1 ms, M/D/1 %2 ms").arg(mean * 1e3).arg(expected * 1e3)));
    }

    // The first prediction's interval (sim_interval.h): the fit's spread
    // carried through the simulation. M/D/1 at rho 0.8 with costs 10% down
    // and up (rho 0.72 and 0.88): the latency moves by far more than 10%
    // (saturation amplifies), each figure's range holds the simulation, and
    // the middle is the simulation as run.
    void intervalCarriesTheFitSpread()
    {
        std::mt19937_64 rng(5);
        std::exponential_distribution<double> gap(80);
        std::vector<PlannedArrival> arrivals(5'000);
        double t = 0;
        for (auto &a : arrivals) {
            t += gap(rng);
            a.offset = fromSeconds(t);
        }
        const SimulatorOptions o = optionsFor(PolicyKind::None, 10ms);
        const SimulatedInterval i = simulatedInterval(o, arrivals, 0.1);
        QCOMPARE(i.spread, 0.1);
        const LatencyFigures as = latencyFigures(simulateSamples(o, arrivals).samples);
        QCOMPARE(i.mid.meanS, as.meanS);
        QCOMPARE(i.mid.p99S, as.p99S);
        QCOMPARE(i.mid.completed, arrivals.size());
        for (auto f :
             {&LatencyFigures::p50S, &LatencyFigures::p90S, &LatencyFigures::p99S, &LatencyFigures::meanS})
            QVERIFY(i.low.*f <= i.mid.*f && i.mid.*f <= i.high.*f);
        QVERIFY2(i.high.meanS > 1.3 * i.mid.meanS && i.low.meanS < 0.85 * i.mid.meanS,
                 qPrintable(QStringLiteral("%1 %2 %3").arg(i.low.meanS).arg(i.mid.meanS).arg(i.high.meanS)));
        // what it says
        SimulatedInterval shown;
        shown.mid = {1, 0.012, 0.02, 1.4, 0.013};
        shown.low = {1, 0.010, 0.018, 1.1, 0.011};
        shown.high = {1, 0.015, 0.03, 2.2, 0.02};
        QCOMPARE(describeInterval(shown), std::string("p50 12.0 ms [10.0-15.0], p90 20.0 ms [18.0-30.0], "
                                                      "p99 1.40 s [1.10-2.20], mean 13.0 ms [11.0-20.0]"));
        // The spread: the fit's rms error over the policy's units.
        Calibration c;
        QVERIFY(!fitSpread(c, PolicyKind::Dynamic)); // nothing measured
        c.batchError = {9, 0.02, 0.19, 0.55};
        c.iterationError = {30, 0.01, 0.04, 0.1};
        QCOMPARE(*fitSpread(c, PolicyKind::Dynamic), 0.19);
        QCOMPARE(*fitSpread(c, PolicyKind::Continuous), 0.04);
        c.batchError.rmsRel = 3;
        QCOMPARE(*fitSpread(c, PolicyKind::Static), 0.9);
    }

    // Several instances run batches side by side; a batch forms only when
    // one is free.
    void instancesRunInParallel_data()
    {
        QTest::addColumn<int>("instances");
        QTest::newRow("1") << 1;
        QTest::newRow("2") << 2;
        QTest::newRow("4") << 4;
    }
    void instancesRunInParallel()
    {
        QFETCH(int, instances);
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::None, 10ms, instances);
        o.observer = &records;
        const SimOutcome out = Simulator(o).run(together(100));
        QCOMPARE(out.completed, std::size_t(100));
        QCOMPARE(out.end - o.start, Duration(10ms) * (100 / instances));
        // at no moment more than `instances` batches in flight
        std::vector<std::pair<TimePoint, int>> events;
        for (const BatchRecord &b : records.batches) {
            events.push_back({b.startedAt, +1});
            events.push_back({b.startedAt + b.compute, -1});
        }
        std::sort(events.begin(), events.end()); // ends (-1) before starts at the same time
        int inFlight = 0, most = 0;
        for (auto [at, delta] : events)
            most = std::max(most, inFlight += delta);
        QCOMPARE(most, instances);
    }

    // Contention between executors (CostModel::concurrency): a unit that
    // starts while another runs is charged the measured slowdown.
    void concurrentUnitsAreSlowedDown()
    {
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::None, 10ms, 2);
        o.cost.concurrency = {1.5};
        o.observer = &records;
        Simulator(o).run(together(2));
        QCOMPARE(records.batches.size(), std::size_t(2));
        std::sort(records.batches.begin(), records.batches.end(),
                  [](const BatchRecord &a, const BatchRecord &b) { return a.executor < b.executor; });
        QCOMPARE(records.batches[0].compute, Duration(10ms)); // alone when it started
        QCOMPARE(records.batches[1].compute, Duration(15ms)); // beside the first
    }

    // Under dynamic batching a busy executor lets requests pile up into
    // larger batches: with one instance the backlog leaves at max_batch_size.
    void busyExecutorsGrowBatches()
    {
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::Dynamic, 10ms);
        o.config.maxBatchSize = 8;
        o.observer = &records;
        std::vector<PlannedArrival> arrivals(40);
        for (std::size_t i = 0; i < arrivals.size(); ++i)
            arrivals[i].offset = std::chrono::milliseconds(i); // 1 ms apart, service 10 ms per batch
        Simulator(o).run(arrivals);
        QVERIFY(records.batches.size() >= 5);
        QCOMPARE(records.batches[1].size, 8); // filled while the first ran
    }

    void queueCapacityRejects()
    {
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::None, 10ms);
        o.config.queueCapacity = 10;
        o.observer = &records;
        const SimOutcome out = Simulator(o).run(together(50));
        // the first leaves at once, ten wait, the rest are refused
        QCOMPARE(out.accepted, std::size_t(11));
        QCOMPARE(out.rejected, std::size_t(39));
        QCOMPARE(records.failed.size(), std::size_t(39));
        for (const RequestRecord &r : records.failed)
            QCOMPARE(r.status, StatusCode::QueueFull);
    }

    // A deadline passes while every executor is busy: the request expires
    // at the next poll, when one frees up (as in the engine).
    void deadlinesExpireInTheQueue()
    {
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::None, 10ms);
        o.observer = &records;
        const SimOutcome out = Simulator(o).run(together(5, 15ms));
        QCOMPARE(out.completed, std::size_t(2)); // started at 0 and 10 ms
        QCOMPARE(out.failed, std::size_t(3));
        QCOMPARE(records.failed.size(), std::size_t(3));
        for (const RequestRecord &r : records.failed) {
            QCOMPARE(r.status, StatusCode::DeadlineExceeded);
            QCOMPARE(r.total, Duration(20ms));
        }
    }

    void staticWithoutFlushFailsItsPartialBatch()
    {
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::Static, 1ms);
        o.config.staticBatchSize = 4;
        o.config.staticFlushOnDrain = false;
        o.observer = &records;
        const SimOutcome out = Simulator(o).run(together(6));
        QCOMPARE(out.completed, std::size_t(4));
        QCOMPARE(out.failed, std::size_t(2));
        for (const RequestRecord &r : records.failed)
            QCOMPARE(r.status, StatusCode::ShuttingDown);
        o.config.staticFlushOnDrain = true;
        QCOMPARE(Simulator(o).run(together(6)).completed, std::size_t(6));
    }

    // A decoder member whose input + new tokens exceed the positions fails
    // alone; the prefill sets the time to first token.
    void generativeBatches()
    {
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::Dynamic, 0ms);
        o.cost.generative = true;
        o.cost.coef = {1e-3, 0, 0, 0, 2e-4, 0, 0}; // prefill 1 ms, each decode step 0.2 ms
        o.output = OutputKind::Generated;
        o.positions = 100;
        o.config.maxQueueDelay = 1ms;
        o.observer = &records;
        std::vector<PlannedArrival> arrivals(3);
        arrivals[0] = {0ms, 10, 5, 0, 0, std::nullopt};
        arrivals[1] = {0ms, 10, 11, 0, 0, std::nullopt};
        arrivals[2] = {0ms, 95, 10, 0, 0, std::nullopt}; // 105 positions
        Simulator(o).run(arrivals);
        QCOMPARE(records.batches.size(), std::size_t(1));
        // prefill + 10 decode steps (the longest want is 11)
        QCOMPARE(records.batches[0].compute, fromSeconds(1e-3 + 10 * 2e-4));
        std::map<std::uint64_t, RequestRecord> byId;
        for (const RequestRecord &r : records.requests)
            byId[r.id] = r;
        QCOMPARE(byId[1].outputTokens, 5);
        QCOMPARE(byId[2].outputTokens, 11);
        QCOMPARE(byId[1].timeToFirstToken,
                 Duration(1ms) + fromSeconds(1e-3)); // waited 1 ms, then the prefill
        // lockstep decode: every member's tokens come one 0.2 ms step apart
        QCOMPARE(byId[1].timePerOutputToken, fromSeconds(2e-4));
        QCOMPARE(byId[2].timePerOutputToken, fromSeconds(2e-4));
        QCOMPARE(byId[1].interTokenLatencies.size(), std::size_t(4));
        QCOMPARE(byId[3].status, StatusCode::OutOfRange);
    }

    // The SLO controller (AIMD on the delay) runs on simulated latencies and
    // stamps its changes.
    void sloControllerActs()
    {
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::Dynamic, 20ms);
        o.config.maxQueueDelay = 40ms;
        o.config.slo.enabled = true;
        o.config.slo.p99Target = 30ms;
        o.config.slo.maxDelay = 40ms;
        o.config.slo.period = 500ms;
        o.observer = &records;
        std::vector<PlannedArrival> arrivals(2000);
        for (std::size_t i = 0; i < arrivals.size(); ++i)
            arrivals[i].offset = std::chrono::milliseconds(5 * i);
        const SimOutcome out = Simulator(o).run(arrivals);
        QVERIFY(out.configChanges > 0);
        QVERIFY(records.changes.size() > 1);
        QCOMPARE(records.changes[1].origin, std::string("slo-controller"));
        QVERIFY(records.changes.back().config.maxQueueDelay < 40ms);
    }

    // Policy continuous, one sequence of n tokens: the prefill is one step,
    // then one decode step per further token, so TTFT = arrival wait +
    // prefill cost and TPOT = step cost (+ the serving overhead with one
    // instance; with two an idle executor leads the next step meanwhile).
    void continuousOneSequenceIsAnalytic_data()
    {
        QTest::addColumn<int>("instances");
        QTest::addColumn<double>("overheadS");
        QTest::addColumn<double>("tpotS");
        QTest::newRow("no overhead") << 1 << 0.0 << 2.1e-3;
        QTest::newRow("overhead, 1 instance") << 1 << 0.5e-3 << 2.6e-3;
        QTest::newRow("overhead, 2 instances") << 2 << 0.5e-3 << 2.1e-3;
    }
    void continuousOneSequenceIsAnalytic()
    {
        QFETCH(int, instances);
        QFETCH(double, overheadS);
        QFETCH(double, tpotS);
        Collector records;
        SimulatorOptions o = continuousOptions(2e-3, 1e-4); // a step: 2 ms + 0.1 ms per token fed
        o.config.instances = instances;
        o.cost.overheadS = overheadS;
        o.observer = &records;
        std::vector<PlannedArrival> one = sequences(1, 8, 5); // prompt 8 (one chunk), 5 tokens
        one[0].offset = 3ms;
        const SimOutcome out = Simulator(o).run(one);
        QCOMPARE(out.completed, std::size_t(1));
        QCOMPARE(out.batches, std::size_t(5)); // the prefill and 4 decodes
        QCOMPARE(records.batches.front().compute, fromSeconds(2e-3 + 8e-4));
        QCOMPARE(records.batches.back().compute, fromSeconds(2e-3 + 1e-4));
        QCOMPARE(records.batches.back().policy, PolicyKind::Continuous);
        QCOMPARE(records.requests.size(), std::size_t(1));
        const RequestRecord &r = records.requests.front();
        QCOMPARE(r.outputTokens, 5);
        QCOMPARE(r.queueWait, Duration::zero());
        QCOMPARE(r.timeToFirstToken, fromSeconds(2.8e-3));
        const double tpot = toSeconds(r.total - r.timeToFirstToken) / 4;
        QVERIFY2(std::abs(tpot - tpotS) < 1e-9, qPrintable(QString::number(tpot * 1e3)));
        QCOMPARE(out.end - o.start, 3ms + fromSeconds(2.8e-3 + 4 * tpotS));
    }

    // max_num_seqs 2, three sequences at once: the first leaves alone in
    // step 1 (the others arrive while it runs), the second joins at step 2,
    // the third waits until the first has its last token (end of step 2)
    // and takes its slot at step 3.
    void continuousFinishedSlotGoesToWaiting()
    {
        Collector records;
        SimulatorOptions o = continuousOptions(1e-3, 0, /*maxNumSeqs=*/2); // 1 ms a step
        o.observer = &records;
        std::vector<PlannedArrival> a = sequences(3, 4, 10);
        a[0].maxNewTokens = 2;
        a[2].maxNewTokens = 3;
        const SimOutcome out = Simulator(o).run(a);
        QCOMPARE(out.completed, std::size_t(3));
        std::map<std::uint64_t, RequestRecord> byId;
        for (const RequestRecord &r : records.requests)
            byId[r.id] = r;
        QCOMPARE(byId[1].total, Duration(2ms));     // prefill (token 1) and one decode
        QCOMPARE(byId[3].queueWait, Duration(2ms)); // joined at the step after 1 left
        QCOMPARE(byId[3].timeToFirstToken, Duration(3ms));
        QCOMPARE(byId[3].total, Duration(5ms));
        QCOMPARE(byId[2].queueWait, Duration(1ms));
        QCOMPARE(byId[2].total, Duration(11ms)); // tokens at the ends of steps 2..11
        for (const BatchRecord &b : records.batches)
            QVERIFY(b.size <= 2);
    }

    // A KV budget too small for every running sequence: sequences are
    // preempted by recompute as the engine's scheduler does with the same
    // budget (same count), and each still gets all its tokens.
    void continuousPreemptsUnderTheKvBudget()
    {
        const std::vector<PlannedArrival> a = sequences(4, 8, 16);
        for (int kv : {40, 0}) {
            Collector records;
            SimulatorOptions o = continuousOptions(1e-3, 1e-5, 4, kv);
            o.observer = &records;
            const SimOutcome out = Simulator(o).run(a);
            QCOMPARE(out.completed, std::size_t(4));
            for (const RequestRecord &r : records.requests)
                QCOMPARE(r.outputTokens, 16);
            QCOMPARE(out.preemptions, enginePreemptions(o.config, a));
            if (kv > 0)
                QVERIFY(out.preemptions > 0);
            else
                QCOMPARE(out.preemptions, std::uint64_t(0));
        }
    }

    // The replacement: with zero cost the simulated replay of builtin:echo
    // forms exactly the batches of the virtual replay, and every request
    // waits exactly as long.
    // An idle executor wakes late (scheduler lateness): the step starts
    // late and its compute is still the charged cost. The simulator once
    // timed a step's end from the decision (now + cost) and its start from
    // the late dispatch, so compute came out as cost - lateness, negative
    // when the wake-up was longer than the step.
    void continuousStepLatenessDelaysTheStep()
    {
        Collector records;
        SimulatorOptions o = continuousOptions(1e-3, 0); // 1 ms a step
        o.cost.dispatchLateness = {5e-3};                // every wake-up 5 ms late
        o.observer = &records;
        std::vector<PlannedArrival> one = sequences(1, 4, 3);
        const SimOutcome out = Simulator(o).run(one);
        QCOMPARE(out.completed, std::size_t(1));
        QVERIFY(!records.batches.empty());
        for (const BatchRecord &b : records.batches) {
            QCOMPARE(b.compute, Duration(1ms));
            QVERIFY(b.startedAt >= b.dispatchedAt);
        }
        // the first step waited for the idle executor's wake-up
        QCOMPARE(records.batches.front().startedAt - o.start, Duration(5ms));
        QCOMPARE(records.requests.front().timeToFirstToken, Duration(6ms));
    }

    // The simulator's snapshot is the engine's: the KV and iteration
    // gauges are in it (they were left out of a copy it once had).
    void snapshotHasTheEnginesGauges()
    {
        SimulatorOptions o = continuousOptions(1e-3, 1e-5, 4, /*kv=*/500);
        std::vector<Snapshot> samples;
        o.onSample = [&](const Snapshot &s) { samples.push_back(s); };
        o.samplePeriod = 2ms;
        const SimOutcome out = Simulator(o).run(sequences(6, 8, 32));
        QCOMPARE(out.completed, std::size_t(6));
        QCOMPARE(out.last.kvCapacityTokens, std::int64_t(500));
        bool sawRunning = false;
        for (const Snapshot &s : samples) {
            QCOMPARE(s.kvCapacityTokens, std::int64_t(500));
            if (s.runningSequences > 0) {
                sawRunning = true;
                QVERIFY(s.kvTokens > 0);
                QVERIFY(s.kvUsageRatio > 0 && s.kvUsageRatio <= 1.0);
            }
        }
        QVERIFY(sawRunning);
    }

    // Priorities reach the records, in the simulator as in the engine.
    void recordsCarryPriority()
    {
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::Dynamic, 1ms);
        o.observer = &records;
        std::vector<PlannedArrival> a = together(3);
        a[1].priority = 7;
        Simulator(o).run(a);
        QCOMPARE(records.requests.size(), std::size_t(3));
        for (const RequestRecord &r : records.requests)
            QCOMPARE(r.priority, r.id == 2 ? 7 : 0);
    }

    void simulatedEchoAgreesWithVirtualReplay_data()
    {
        QTest::addColumn<QString>("policy");
        QTest::newRow("none") << "none";
        QTest::newRow("static") << "static";
        QTest::newRow("dynamic") << "dynamic";
        QTest::newRow("bucketed") << "bucketed";
        QTest::newRow("hybrid") << "hybrid";
        QTest::newRow("adaptive") << "adaptive";
        QTest::newRow("continuous") << "continuous"; // a KV budget that preempts
    }
    void simulatedEchoAgreesWithVirtualReplay()
    {
        QFETCH(QString, policy);
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        std::mt19937_64 rng(42);
        std::exponential_distribution<double> gap(300);
        std::uniform_int_distribution<int> len(1, 600), out(0, 50);
        std::vector<TraceRow> rows;
        double t = 0;
        for (int i = 0; i < 4000; ++i) {
            if (i % 7 != 3)
                t += gap(rng);
            rows.push_back({t, len(rng), out(rng)});
        }
        rows.front().arrivalS = 0;
        const auto trace = store->addTrace("t", "", TraceFormat::Plain, rows).value().id;

        BatchingConfig config;
        config.maxQueueDelay = 10ms;
        config.maxBatchSize = 16;
        if (policy == "adaptive") {
            config.policy = PolicyKind::Dynamic;
            config.adaptiveDelay.enabled = true;
        } else if (policy == "continuous") {
            config.policy = PolicyKind::Continuous;
            config.continuous.maxNumSeqs = 8;
            config.continuous.maxNumBatchedTokens = 256;
            config.continuous.prefillChunk = 64;
            config.continuous.kvCacheTokens = 1200;
        } else {
            config.policy = *parsePolicy(policy.toStdString());
        }
        config.staticPaddedLength = 600;
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        o.config = config;
        o.clock = ReplayClock::Virtual;
        auto echo = makeEchoBackend(256, 2048);
        auto virtualRun = Replayer(store, echo).run(o);
        QVERIFY2(virtualRun, virtualRun.status().toString().c_str());

        Calibration zero = Calibration::forModel(echo->info(), "", 1);
        auto simulated = SimulatedReplay(store, zero).run(o);
        QVERIFY2(simulated, simulated.status().toString().c_str());
        QCOMPARE(simulated->completed, virtualRun->completed);
        QCOMPARE(simulated->rejected, virtualRun->rejected);
        QVERIFY(simulated->completed > 1000);

        auto vb = store->batches(virtualRun->sessionId).value();
        auto sb = store->batches(simulated->sessionId).value();
        QCOMPARE(sb.size(), vb.size());
        for (std::size_t i = 0; i < vb.size(); ++i) {
            QCOMPARE(sb[i].batchId, vb[i].batchId);
            QCOMPARE(sb[i].size, vb[i].size);
            QCOMPARE(sb[i].paddedLength, vb[i].paddedLength);
            QCOMPARE(sb[i].reason, vb[i].reason);
            QCOMPARE(sb[i].bucket, vb[i].bucket);
            QCOMPARE(sb[i].dispatched, vb[i].dispatched);
        }
        auto vr = store->requests(virtualRun->sessionId).value();
        auto sr = store->requests(simulated->sessionId).value();
        QCOMPARE(sr.size(), vr.size());
        for (std::size_t i = 0; i < vr.size(); ++i) {
            QCOMPARE(sr[i].requestId, vr[i].requestId);
            QCOMPARE(sr[i].queueWait, vr[i].queueWait);
            QCOMPARE(sr[i].total, vr[i].total);
            QCOMPARE(sr[i].batchId, vr[i].batchId);
            QCOMPARE(sr[i].outputTokens, vr[i].outputTokens);
            QCOMPARE(sr[i].timeToFirstToken, vr[i].timeToFirstToken);
            QCOMPARE(sr[i].status, vr[i].status);
        }
        const SessionSummary a = store->summary(virtualRun->sessionId).value();
        const SessionSummary b = store->summary(simulated->sessionId).value();
        QCOMPARE(b.latencyP99Ms, a.latencyP99Ms);
        QCOMPARE(b.meanBatchSize, a.meanBatchSize);

        // marked as a simulation, its calibration named
        const SessionInfo info = store->session(simulated->sessionId).value();
        QCOMPARE(info.kind, std::string("simulation"));
        QCOMPARE(*info.sourceTraceId, trace);
        QCOMPARE(info.replay.value("clock", ""), std::string("simulated"));
        QCOMPARE(info.replay["calibration"].value("model", ""), std::string("builtin:echo"));
        QVERIFY(!store->metricSamples(simulated->sessionId).value().empty());
    }

    // A remote server's calibration carries its per-request path (HTTP,
    // tokenisation, the first token's delivery): replay --simulate adds it
    // to every request's total and first-token time, as tune does, and to
    // nothing else.
    // A trace without prefix blocks has distinct prompts: a server model
    // whose prompt caching is on (llama-server) must find nothing to reuse.
    // It used to be given all-zero prompts, which shared every block: 82 %
    // of the prompt tokens of a llama-server replay were predicted cached
    // (and its TTFT no longer grew with the prompt) where the real server
    // reused none.
    void distinctPromptsShareNoPrefixWithPromptCachingOn()
    {
        Collector records;
        SimulatorOptions o = continuousOptions(2e-3, 1e-4);
        o.config.server.kind = ServerKind::LlamaCpp;
        o.config.server.llamacpp.nParallel = 2;
        o.config.server.llamacpp.nCtx = 4096;
        o.config.prefixCache.enabled = true;
        o.config.prefixCache.blockTokens = 16;
        o.limits.vocabSize = 400;
        o.observer = &records;
        std::vector<PlannedArrival> a = sequences(6, 64, 3);
        for (std::size_t i = 0; i < a.size(); ++i)
            a[i].offset = std::chrono::milliseconds(100 * i); // one at a time: each after the last ended
        const SimOutcome out = Simulator(o).run(a);
        QCOMPARE(out.completed, a.size());
        QCOMPARE(records.requests.size(), a.size());
        for (const RequestRecord &r : records.requests)
            QCOMPARE(r.cachedTokens, 0);
        // Every prompt computed: 64 tokens at 0.1 ms beside the 2 ms step.
        for (const RequestRecord &r : records.requests)
            QCOMPARE(r.timeToFirstToken, fromSeconds(2e-3 + 64e-4));
    }

    void remoteCalibrationAddsItsRequestPath()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        std::vector<TraceRow> rows;
        for (int i = 0; i < 40; ++i)
            rows.push_back({0.01 * i, 20 + (i * 7) % 50, 1 + i % 9});
        const auto trace = store->addTrace("t", "", TraceFormat::Plain, rows).value().id;
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        BatchingConfig config;
        config.policy = PolicyKind::Continuous;
        config.continuous.maxNumSeqs = 4;
        o.config = config;
        Calibration local;
        local.model = "test:decoder";
        local.generative = true;
        local.vocabSize = 256;
        local.maxSequenceLength = 4096;
        local.cost.generative = true;
        local.cost.coef[CostModel::kIterationStart] = 2e-3;
        local.cost.coef[CostModel::kIterationStart + 2] = 1e-5;
        Calibration remote = local;
        remote.remote = RemoteCalibration{};
        remote.remote->requestOverheadS = 0.025;

        SimulatedReplay a(store, local), b(store, remote);
        a.setCostNoise(CostNoise::None);
        b.setCostNoise(CostNoise::None);
        auto steps = a.run(o);
        auto client = b.run(o);
        QVERIFY2(steps && client, "both replays run");
        QCOMPARE(client->completed, rows.size());
        const auto sa = store->requests(steps->sessionId).value();
        const auto sb = store->requests(client->sessionId).value();
        QCOMPARE(sb.size(), sa.size());
        for (std::size_t i = 0; i < sa.size(); ++i) {
            QCOMPARE(sb[i].requestId, sa[i].requestId);
            QVERIFY(sa[i].timeToFirstToken > Duration::zero());
            QCOMPARE(sb[i].total - sa[i].total, Duration(25ms));
            QCOMPARE(sb[i].timeToFirstToken - sa[i].timeToFirstToken, Duration(25ms));
            QCOMPARE(sb[i].queueWait, sa[i].queueWait);
            QCOMPARE(sb[i].timePerOutputToken, sa[i].timePerOutputToken);
        }
    }
};

QTEST_GUILESS_MAIN(TestSimulator)
#include "test_simulator.moc"
