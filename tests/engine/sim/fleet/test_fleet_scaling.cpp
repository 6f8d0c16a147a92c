// A fleet that scales on the virtual clock — a new
// replica serves only after its cold start, a removed one drains, a starting
// one is cancelled first, billing runs from the ask to the end of the drain
// — and the autoscaler replayed over a trace: windows, misses during cold
// starts, cost, and the search for the cheapest policy that meets the SLO.
#include "engine/sim/fleet/autoscale_sim.h"
#include "engine/sim/simulation/simulator.h"
#include "engine/store/fleet_store.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <array>
#include <map>

Q_DECLARE_METATYPE(bp::RouterPolicy)
Q_DECLARE_METATYPE(bp::CostNoise)

using namespace bp;
using namespace std::chrono_literals;

namespace {

// One request per batch, each `cost` long: a deterministic server.
SimulatorOptions deterministic(Duration cost)
{
    SimulatorOptions o;
    o.config.policy = PolicyKind::None;
    o.config.queueCapacity = 1'000'000;
    o.cost.coef[0] = toSeconds(cost);
    return o;
}

// One arrival at k + 0.5 s for each k in [from, to), `perSecond` of them spread over each second.
void steady(std::vector<PlannedArrival> &out, double from, double to, int perSecond)
{
    for (double t = from; t < to; t += 1.0)
        for (int i = 0; i < perSecond; ++i) {
            PlannedArrival a;
            a.offset = fromSeconds(t + (i + 0.5) / perSecond);
            out.push_back(a);
        }
}

struct Events {
    std::vector<ScaleEvent> all;
    std::vector<double> at(ReplicaPhase p) const
    {
        std::vector<double> t;
        for (const ScaleEvent &e : all)
            if (e.phase == p)
                t.push_back(e.atS);
        return t;
    }
};

// A decision that follows a script: the replicas wanted from each time on.
FleetScaling scripted(std::map<double, int> script, Duration coldStart, Events &events)
{
    FleetScaling s;
    s.period = 15s;
    s.coldStart = coldStart;
    s.maxReplicas = 8;
    s.decide = [script](const FleetObservation &o) {
        int want = 1;
        for (const auto &[from, n] : script)
            if (o.atS >= from)
                want = n;
        return want;
    };
    s.onEvent = [&events](const ScaleEvent &e) { events.all.push_back(e); };
    return s;
}

} // namespace

class TestFleetScaling : public QObject {
    Q_OBJECT
private slots:
    // Up at the decision at 60 s, serving at 90 s (cold start 30 s); the
    // router sends nothing to a starting replica; down at 300 s, the two
    // drain (the last serving one never does); billing from ask to gone.
    void coldStartThenDrain()
    {
        Events events;
        SimulatorOptions o = deterministic(100ms);
        o.router.policy = RouterPolicy::RoundRobin;
        o.scaling = scripted({{60, 3}, {300, 1}}, 30s, events);
        std::vector<PlannedArrival> arrivals;
        steady(arrivals, 0, 600, 1);
        const SimOutcome out = Simulator(o).run(arrivals);
        QVERIFY2(out.status.isOk(), out.status.message().c_str());
        QCOMPARE(out.completed, arrivals.size());
        QCOMPARE(events.at(ReplicaPhase::Starting), (std::vector<double>{60, 60}));
        QCOMPARE(events.at(ReplicaPhase::Ready), (std::vector<double>{90, 90}));
        QCOMPARE(events.at(ReplicaPhase::Draining), (std::vector<double>{300, 300}));
        const auto gone = events.at(ReplicaPhase::Gone);
        QCOMPARE(gone.size(), std::size_t(2));
        for (double t : gone) // each drained its one request in flight, if any, within 0.1 s
            QVERIFY(t >= 300 && t <= 300.1 + 1e-9);
        // 0..89 and 300..599 go to replica 0; 90.5..299.5 (210 arrivals) round the three.
        QCOMPARE(out.replicas.size(), std::size_t(3));
        QCOMPARE(out.replicas[1].routed, std::size_t(70));
        QCOMPARE(out.replicas[2].routed, std::size_t(70));
        QCOMPARE(out.replicas[0].routed, std::size_t(600 - 140));
        QCOMPARE(out.peakReplicas, 3);
        const double span = toSeconds(out.end - o.start);
        const double expected = span + (gone[0] - 60) + (gone[1] - 60);
        QVERIFY2(std::abs(out.replicaSeconds - expected) < 1e-6,
                 qPrintable(QString::number(out.replicaSeconds) + " vs " + QString::number(expected)));
    }

    // A scale-down while a replica is still starting cancels it (it never
    // serves) and bills it only up to the cancel.
    void scaleDownCancelsAStartingReplicaFirst()
    {
        Events events;
        SimulatorOptions o = deterministic(10ms);
        o.scaling = scripted({{15, 2}, {30, 1}}, 60s, events);
        std::vector<PlannedArrival> arrivals;
        steady(arrivals, 0, 120, 2);
        const SimOutcome out = Simulator(o).run(arrivals);
        QVERIFY(out.status.isOk());
        QCOMPARE(events.at(ReplicaPhase::Starting), (std::vector<double>{15}));
        QCOMPARE(events.at(ReplicaPhase::Gone), (std::vector<double>{30}));
        QVERIFY(events.at(ReplicaPhase::Ready).empty());
        QVERIFY(events.at(ReplicaPhase::Draining).empty());
        QCOMPARE(out.replicas.size(), std::size_t(2));
        QCOMPARE(out.replicas[1].routed, std::size_t(0));
        QVERIFY(std::abs(out.replicaSeconds - (toSeconds(out.end - o.start) + 15)) < 1e-6);
    }

    // Decisions are clamped to 1..max; the fleet never drains its last
    // serving replica; a decision sees the load; bad set-ups are refused.
    void clampsObservesAndRefuses()
    {
        Events events;
        SimulatorOptions o = deterministic(50ms);
        o.replicas = 2;
        std::vector<FleetObservation> seen;
        o.scaling = scripted({{0, 0}}, 0s, events);
        o.scaling->maxReplicas = 4;
        o.scaling->onDecision = [&seen](const FleetObservation &ob, int wanted) {
            QCOMPARE(wanted, 1);
            seen.push_back(ob);
        };
        std::vector<PlannedArrival> arrivals;
        steady(arrivals, 0, 60, 4);
        const SimOutcome out = Simulator(o).run(arrivals);
        QVERIFY(out.status.isOk());
        QCOMPARE(events.at(ReplicaPhase::Draining).size(), std::size_t(1));
        QVERIFY(!seen.empty());
        QCOMPARE(seen.front().atS, 15.0);
        QCOMPARE(seen.front().ready, 2);
        QCOMPARE(seen.front().arrivalRate, 4.0); // 60 arrivals over the first 15 s
        QCOMPARE(seen.back().ready, 1);

        SimulatorOptions bad = deterministic(50ms);
        bad.scaling = FleetScaling{}; // no decision
        QCOMPARE(Simulator(bad).run(arrivals).status.code(), StatusCode::InvalidArgument);
        struct Nothing final : EngineObserver {
        } observer;
        bad.scaling = scripted({}, 0s, events);
        bad.observer = &observer;
        QCOMPARE(Simulator(bad).run(arrivals).status.code(), StatusCode::InvalidArgument);
    }

    // Under policy continuous a decision sees sequences as a live server's
    // gauges say them: running (at most max_num_seqs) and waiting apart,
    // not the scheduler's size (both together) as waiting. 12 long
    // generations arrive at once on one replica of max_num_seqs 4 (and one
    // more at 10 s).
    void observesRunningAndWaitingSequences()
    {
        SimulatorOptions o;
        o.config.policy = PolicyKind::Continuous;
        o.config.queueCapacity = 1000;
        o.config.continuous.maxNumSeqs = 4;
        o.config.continuous.maxNumBatchedTokens = 64;
        o.limits.maxSequenceLength = 2048;
        o.cost.generative = true;
        o.cost.coef[CostModel::kIterationStart] = 0.01; // a step: 10 ms
        o.output = OutputKind::Generated;
        Events events;
        std::vector<FleetObservation> seen;
        o.scaling = scripted({}, 0s, events);
        o.scaling->period = 1s;
        o.scaling->onDecision = [&seen](const FleetObservation &ob, int) { seen.push_back(ob); };
        std::vector<PlannedArrival> arrivals(12);
        for (PlannedArrival &a : arrivals) {
            a.offset = 100ms;
            a.inputTokens = 8;
            a.maxNewTokens = 400; // ~4 s each at 10 ms a step
        }
        arrivals.push_back(arrivals.back()); // decisions come while arrivals are still due
        arrivals.back().offset = 10s;
        arrivals.back().maxNewTokens = 1;
        const SimOutcome out = Simulator(o).run(arrivals);
        QVERIFY2(out.status.isOk(), out.status.message().c_str());
        QVERIFY(!seen.empty());
        QCOMPARE(seen.front().atS, 1.0);
        QCOMPARE(seen.front().running, 4.0);
        QCOMPARE(seen.front().waiting, 8.0);
    }

    // Coalesced decode runs (SimulatorOptions::coalesceDecodeRuns) change
    // how fast a fleet is simulated, not what it serves: a scaled fleet
    // under policy continuous — cold starts, drains, a KV budget tight
    // enough to preempt, scheduler lateness and a step overhead — gives
    // every request the same outcome to the nanosecond, stepped or
    // coalesced, with either router, at noise none and mean (the draws of
    // drawn noise come in another order).
    void coalescedDecodeRunsMatchStepping_data()
    {
        QTest::addColumn<RouterPolicy>("router");
        QTest::addColumn<CostNoise>("noise");
        QTest::newRow("least-outstanding, none") << RouterPolicy::LeastOutstanding << CostNoise::None;
        QTest::newRow("least-kv, mean") << RouterPolicy::LeastKv << CostNoise::Mean;
    }
    void coalescedDecodeRunsMatchStepping()
    {
        QFETCH(RouterPolicy, router);
        QFETCH(CostNoise, noise);
        SimulatorOptions o;
        o.config.policy = PolicyKind::Continuous;
        o.config.queueCapacity = 10'000;
        o.config.continuous.maxNumSeqs = 6;
        o.config.continuous.maxNumBatchedTokens = 256;
        o.config.continuous.chunkedPrefill = true;
        o.config.continuous.prefillChunk = 128;
        o.config.continuous.kvCacheTokens = 1500; // tight: sequences are preempted
        o.limits.maxSequenceLength = 1024;
        o.limits.vocabSize = 1000;
        o.cost.generative = true;
        o.cost.coef[CostModel::kIterationStart] = 0.004;         // s0: 4 ms a step
        o.cost.coef[CostModel::kIterationStart + 1] = 0.0005;    // s1: per sequence
        o.cost.coef[CostModel::kIterationStart + 2] = 0.00002;   // s2: per token
        o.cost.coef[CostModel::kIterationStart + 3] = 0.0000001; // s3: per token attended
        o.cost.stepOverheadS = 0.0007;
        o.cost.dispatchLateness = {0.0001, 0.0004, 0.002};
        o.cost.iterationResiduals = {0.8, 1.0, 1.35};
        o.costNoise = noise;
        o.output = OutputKind::Generated;
        o.router.policy = router;
        std::vector<PlannedArrival> arrivals;
        std::uint64_t lcg = 12345;
        auto draw = [&lcg](int lo, int hi) {
            lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
            return lo + int((lcg >> 33) % std::uint64_t(hi - lo + 1));
        };
        for (double t = 0; t < 150;) {
            t += 0.05 + draw(0, 400) / 1000.0 * (t > 40 && t < 90 ? 0.3 : 1.0); // a busier middle
            PlannedArrival a;
            a.offset = fromSeconds(t);
            a.inputTokens = draw(4, 300);
            a.maxNewTokens = draw(1, 400);
            arrivals.push_back(a);
        }
        struct Seen {
            bool ok = false;
            std::size_t tokens = 0;
            Duration ttft{}, tpot{}, total{};
            std::size_t gaps = 0;
            bool operator==(const Seen &) const = default;
        };
        // What each decision saw: the KV a run's steps leave is read there.
        using Observed = std::vector<std::array<double, 4>>;
        auto simulate = [&](bool coalesce, std::vector<Seen> &seen, Events &events, Observed &observed) {
            SimulatorOptions c = o;
            c.coalesceDecodeRuns = coalesce;
            c.scaling = scripted({{0, 1}, {30, 3}, {100, 2}}, 10s, events);
            c.scaling->period = 5s;
            c.scaling->onDecision = [&observed](const FleetObservation &ob, int) {
                observed.push_back({ob.atS, ob.running, ob.waiting, ob.kvUsage});
            };
            c.onResponse = [&seen](std::size_t i, TimePoint, const Response &r) {
                seen[i] = {r.status.isOk(),
                           r.tokens.size(),
                           r.timing.timeToFirstToken,
                           r.timing.timePerOutputToken,
                           r.timing.total,
                           r.timing.interTokenLatencies.size()};
            };
            seen.assign(arrivals.size(), {});
            return Simulator(c).run(arrivals);
        };
        std::vector<Seen> stepped, coalesced;
        Events steppedEvents, coalescedEvents;
        Observed steppedSaw, coalescedSaw;
        const SimOutcome a = simulate(false, stepped, steppedEvents, steppedSaw);
        const SimOutcome b = simulate(true, coalesced, coalescedEvents, coalescedSaw);
        QVERIFY2(a.status.isOk(), a.status.message().c_str());
        QVERIFY2(b.status.isOk(), b.status.message().c_str());
        QCOMPARE(a.coalescedSteps, std::size_t(0));
        QVERIFY2(b.coalescedSteps * 3 > b.batches,
                 qPrintable(QString("%1 of %2 steps coalesced").arg(b.coalescedSteps).arg(b.batches)));
        QVERIFY(a.preemptions > 0); // the KV budget bites
        QCOMPARE(a.completed, arrivals.size());
        for (std::size_t i = 0; i < arrivals.size(); ++i)
            QVERIFY2(stepped[i] == coalesced[i],
                     qPrintable(QString("request %1: ttft %2 vs %3 ns, total %4 vs %5 ns")
                                    .arg(i)
                                    .arg(stepped[i].ttft.count())
                                    .arg(coalesced[i].ttft.count())
                                    .arg(stepped[i].total.count())
                                    .arg(coalesced[i].total.count())));
        QCOMPARE(b.completed, a.completed);
        QCOMPARE(b.batches, a.batches);
        QCOMPARE(b.preemptions, a.preemptions);
        QCOMPARE(b.end, a.end);
        QCOMPARE(b.replicaSeconds, a.replicaSeconds);
        QCOMPARE(b.peakReplicas, a.peakReplicas);
        QCOMPARE(b.replicas.size(), a.replicas.size());
        for (std::size_t r = 0; r < a.replicas.size(); ++r) {
            QCOMPARE(b.replicas[r].routed, a.replicas[r].routed);
            QCOMPARE(b.replicas[r].batches, a.replicas[r].batches);
            QCOMPARE(b.replicas[r].outputTokens, a.replicas[r].outputTokens);
            QCOMPARE(b.replicas[r].peakKvTokens, a.replicas[r].peakKvTokens);
            QVERIFY(std::abs(b.replicas[r].busyS - a.replicas[r].busyS) < 1e-9);
        }
        QCOMPARE(coalescedSaw.size(), steppedSaw.size());
        for (std::size_t i = 0; i < steppedSaw.size(); ++i)
            QVERIFY2(coalescedSaw[i] == steppedSaw[i],
                     qPrintable(QString("decision at %1 s: running %2 vs %3, waiting %4 vs %5, kv %6 vs %7")
                                    .arg(steppedSaw[i][0])
                                    .arg(coalescedSaw[i][1])
                                    .arg(steppedSaw[i][1])
                                    .arg(coalescedSaw[i][2])
                                    .arg(steppedSaw[i][2])
                                    .arg(coalescedSaw[i][3])
                                    .arg(steppedSaw[i][3])));
        QCOMPARE(coalescedEvents.all.size(), steppedEvents.all.size());
        for (std::size_t i = 0; i < steppedEvents.all.size(); ++i) {
            QCOMPARE(coalescedEvents.all[i].atS, steppedEvents.all[i].atS);
            QCOMPARE(coalescedEvents.all[i].phase, steppedEvents.all[i].phase);
        }
    }

    // A step in the load (2/s, then 30/s against 10/s a replica serves):
    // the reactive policy scales up and the requests that wait through the
    // cold start miss the SLO — attributed to it. Without a cold start the
    // same policy misses less; windows and cost add up.
    // A run told how many missed windows it may have stops at the first
    // one past that, once the window surely missed (more than 1% of its
    // requests over the bound); allowed more, the same run goes to the end.
    void stopsOnceTooManyWindowsMissed()
    {
        const SimulatorOptions model = deterministic(100ms);
        std::vector<PlannedArrival> arrivals;
        steady(arrivals, 0, 900, 30); // 3x what the one replica serves
        AutoscaleSimRequest r;
        r.config = model.config;
        r.slo.e2eP99 = 2s;
        r.windowS = 60;
        ReactiveKnobs k;
        k.bounds = {1, 1};
        r.stopAboveMissedWindows = 2;
        const AutoscaleRun cut = simulateAutoscale(model, arrivals, r, k);
        QVERIFY(cut.status.isOk());
        QVERIFY(cut.stopped && cut.missedOut && !cut.cancelled);
        QVERIFY(cut.windows.empty()); // not judged
        // stopped well before the 900 s of arrivals ended (its misses surface as its queue drains)
        QVERIFY2(cut.replicaHours * 3600 < 600, qPrintable(QString::number(cut.replicaHours * 3600)));
        r.stopAboveMissedWindows = 0;
        const AutoscaleRun whole = simulateAutoscale(model, arrivals, r, k);
        QVERIFY(!whole.stopped && !whole.missedOut);
        QCOMPARE(whole.windows.size(), std::size_t(15));
        QVERIFY(whole.windowsMet <= 1);
    }

    void stepLoadMissesDuringTheColdStart()
    {
        const SimulatorOptions model = deterministic(100ms);
        std::vector<PlannedArrival> arrivals;
        steady(arrivals, 0, 300, 2);
        steady(arrivals, 300, 900, 30);
        AutoscaleSimRequest r;
        r.config = model.config; // one request at a time: 10/s a replica
        r.slo.e2eP99 = 2s;
        r.windowS = 60;
        r.periodS = 15;
        ReactiveKnobs k;
        k.metric = ScaleMetric::QueueDepth;
        k.target = 5;
        k.bounds = {1, 8};
        r.coldStartS = 120;
        const AutoscaleRun slow = simulateAutoscale(model, arrivals, r, k);
        r.coldStartS = 0;
        const AutoscaleRun fast = simulateAutoscale(model, arrivals, r, k);
        for (const AutoscaleRun *run : {&slow, &fast}) {
            if (qEnvironmentVariableIsSet("BP_DEBUG"))
                qDebug("%s", autoscaleRunJson(*run).dump().c_str());
            QVERIFY(run->status.isOk());
            QCOMPARE(run->requests, arrivals.size());
            QCOMPARE(run->windows.size(), std::size_t(15));
            std::size_t sum = 0;
            for (const AutoscaleWindow &w : run->windows)
                sum += w.requests;
            QCOMPARE(sum, arrivals.size());
            QVERIFY(run->peakReplicas >= 3);
            QVERIFY(run->scaleUps >= 2);
        }
        QVERIFY(slow.windows[0].met && slow.windows[4].met); // before the step
        QVERIFY(!slow.windows[5].met);                       // the step and its cold start
        QVERIFY(slow.coldMisses > 0);
        // Most during the cold start; the rest arrived in the 15 s before the
        // decision that asked for replicas (the policy's reaction, not the start).
        QVERIFY(slow.coldMisses * 10 >= slow.misses * 8);
        QVERIFY2(fast.misses < slow.misses,
                 qPrintable(QString::number(fast.misses) + " vs " + QString::number(slow.misses)));
        QCOMPARE(fast.coldMisses, std::size_t(0));
        QVERIFY(slow.replicaHours > 900.0 / 3600);
        r.replicaCostPerHour = 2;
        const AutoscaleRun priced = simulateAutoscale(model, arrivals, r, k);
        QCOMPARE(priced.cost, priced.replicaHours * 2);
        const auto doc = autoscaleRunJson(slow);
        QCOMPARE(doc["windows"].size(), std::size_t(15));
        QCOMPARE(doc["timeline"][0].size(), std::size_t(5));
    }

    // The search finds a policy that meets the SLO in every window, cheaper
    // than the most eager one it could have taken, and each cheaper rung
    // it tried on the winner's ladder missed (or billed more).
    void searchFindsTheCheapestPolicyThatMeets()
    {
        const SimulatorOptions model = deterministic(100ms);
        std::vector<PlannedArrival> arrivals;
        int step = 0; // 5/s up to 25/s in 300 s steps, and down
        for (int rate : {5, 10, 15, 20, 25, 10, 5}) {
            steady(arrivals, step * 300.0, step * 300.0 + 300, rate);
            ++step;
        }
        AutoscaleSimRequest r;
        r.config = model.config;
        r.slo.e2eP99 = 3s;
        r.windowS = 300;
        r.coldStartS = 60;
        ReactiveKnobs k;
        k.metric = ScaleMetric::RunningSequences;
        k.target = 0.8;
        k.bounds = {1, 6};
        AutoscaleSearch s;
        s.requiredShare = 0.99;
        s.threads = 2;
        const AutoscaleSearchResult found = searchAutoscale(model, arrivals, r, k, s);
        QVERIFY(found.best);
        QVERIFY(found.bestRun.windowsMetShare() >= 0.99);
        QVERIFY(found.runs >= 4);
        QCOMPARE(found.tried.size(), found.runs);
        for (const auto &[knobs, run] : found.tried)
            if (run.status && !run.stopped && run.windowsMetShare() >= 0.99)
                QVERIFY(run.replicaHours >= found.bestRun.replicaHours);
        double dearest = 0;
        for (const auto &[knobs, run] : found.tried)
            if (!run.stopped)
                dearest = std::max(dearest, run.replicaHours);
        QVERIFY(found.bestRun.replicaHours < dearest);
    }

    // A trace read whole at a rate scale; a run stored and read back (the
    // headline without its document); bad ids and traces are errors.
    void loadsATraceAndStoresARun()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        std::vector<TraceRow> rows;
        for (int i = 0; i < 100; ++i)
            rows.push_back({i * 2.0, 16, 4});
        const auto trace = store->addTrace("t", "", TraceFormat::Plain, rows).value().id;
        const SimulatorOptions model = deterministic(10ms);
        auto loaded = loadAutoscaleArrivals(*store, trace, 4, model);
        QVERIFY(loaded);
        QCOMPARE(loaded->arrivals.size(), std::size_t(100));
        QCOMPARE(loaded->spanS, 99 * 2.0 / 4);
        QCOMPARE(loaded->outputTokens, std::int64_t(400));
        QCOMPARE(loadAutoscaleArrivals(*store, trace + 1, 4, model).status().code(), StatusCode::NotFound);
        QCOMPARE(loadAutoscaleArrivals(*store, trace, 0, model).status().code(), StatusCode::InvalidArgument);

        AutoscaleSimRequest r;
        r.config = model.config;
        r.slo.e2eP99 = 1s;
        r.windowS = 10;
        ReactiveKnobs k;
        const AutoscaleRun run = simulateAutoscale(model, loaded->arrivals, r, k);
        QVERIFY(run.status.isOk());
        StoredAutoscaleRun stored;
        stored.sourceTraceId = trace;
        stored.slo = "p99 <= 1 s";
        stored.policy = run.policy;
        stored.result = {{"run", autoscaleRunJson(run)}};
        auto id = saveAutoscaleRun(*store, stored);
        QVERIFY(id);
        const auto heads = autoscaleRunHeadlines(*store, trace);
        QVERIFY(heads);
        QCOMPARE(heads->size(), std::size_t(1));
        QCOMPARE(heads->front().policy, run.policy);
        QCOMPARE(heads->front().windowsMetShare, run.windowsMetShare());
        QCOMPARE(heads->front().peakReplicas, run.peakReplicas);
        const auto back = autoscaleRun(*store, *id);
        QVERIFY(back);
        QCOMPARE(back->result["run"]["windows"].size(), run.windows.size());
        QCOMPARE(autoscaleRun(*store, *id + 1).status().code(), StatusCode::NotFound);
    }
};

QTEST_GUILESS_MAIN(TestFleetScaling)
#include "test_fleet_scaling.moc"
