// The simulator: with a fake cost of known value it reproduces an analytic
// queueing result (M/D/1 at batch 1), models instances, queue capacity,
// deadlines and the drain; and a simulated replay of builtin:echo (zero
// cost) agrees batch for batch and request for request with the virtual
// replay it replaces, under every request-level policy.
#include "engine/sim/simulated_replay.h"
#include "engine/sim/simulator.h"
#include "engine/store/replayer.h"
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

std::vector<SimArrival> together(int n, std::optional<Duration> timeout = std::nullopt)
{
    std::vector<SimArrival> a(static_cast<std::size_t>(n));
    for (auto &x : a)
        x.timeout = timeout;
    return a;
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
        std::vector<SimArrival> arrivals(200'000);
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

    // Under dynamic batching a busy executor lets requests pile up into
    // larger batches: with one instance the backlog leaves at max_batch_size.
    void busyExecutorsGrowBatches()
    {
        Collector records;
        SimulatorOptions o = optionsFor(PolicyKind::Dynamic, 10ms);
        o.config.maxBatchSize = 8;
        o.observer = &records;
        std::vector<SimArrival> arrivals(40);
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
        std::vector<SimArrival> arrivals(3);
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
        std::vector<SimArrival> arrivals(2000);
        for (std::size_t i = 0; i < arrivals.size(); ++i)
            arrivals[i].offset = std::chrono::milliseconds(5 * i);
        const SimOutcome out = Simulator(o).run(arrivals);
        QVERIFY(out.configChanges > 0);
        QVERIFY(records.changes.size() > 1);
        QCOMPARE(records.changes[1].origin, std::string("slo-controller"));
        QVERIFY(records.changes.back().config.maxQueueDelay < 40ms);
    }

    // The replacement: with zero cost the simulated replay of builtin:echo
    // forms exactly the batches of the virtual replay, and every request
    // waits exactly as long.
    void simulatedEchoAgreesWithVirtualReplay_data()
    {
        QTest::addColumn<QString>("policy");
        QTest::newRow("none") << "none";
        QTest::newRow("static") << "static";
        QTest::newRow("dynamic") << "dynamic";
        QTest::newRow("bucketed") << "bucketed";
        QTest::newRow("hybrid") << "hybrid";
        QTest::newRow("adaptive") << "adaptive";
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
};

QTEST_GUILESS_MAIN(TestSimulator)
#include "test_simulator.moc"
