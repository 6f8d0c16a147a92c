// Fleets: the router's policies on the virtual clock, N replicas
// of a known-cost backend against M/D/c queueing, the fleet's records in a
// simulated session, and the capacity planner's search on a synthetic
// surface (and on a simulated trace).
#include "engine/model/backend.h"
#include "engine/sim/fleet/capacity_plan.h"
#include "engine/sim/fleet/fleet_export.h"
#include "engine/sim/fleet/fleet_plan.h"
#include "engine/sim/simulation/router.h"
#include "engine/sim/simulation/simulator.h"
#include "engine/sim/tune/simulated_replay.h"
#include "engine/store/fleet_store.h"
#include "engine/store/sqlite_db.h"
#include "engine/store/trace_store.h"

#include <QtTest>

#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace bp;
using namespace std::chrono_literals;

namespace {

struct Collector final : EngineObserver {
    std::vector<BatchRecord> batches;
    std::vector<RequestRecord> requests;
    void onBatchCompleted(const BatchRecord &b, std::span<const RequestRecord> rs) override
    {
        batches.push_back(b);
        requests.insert(requests.end(), rs.begin(), rs.end());
    }
};

// One request per batch, each `cost` long: a deterministic server.
SimulatorOptions deterministic(Duration cost, int replicas, RouterPolicy router)
{
    SimulatorOptions o;
    o.config.policy = PolicyKind::None;
    o.config.queueCapacity = 1'000'000;
    o.cost.coef[0] = toSeconds(cost);
    o.replicas = replicas;
    o.router.policy = router;
    return o;
}

std::vector<PlannedArrival> poisson(std::size_t n, double lambda, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::exponential_distribution<double> gap(lambda);
    std::vector<PlannedArrival> arrivals(n);
    double t = 0;
    for (auto &a : arrivals) {
        t += gap(rng);
        a.offset = fromSeconds(t);
    }
    return arrivals;
}

// Erlang C: the probability that an arrival waits in M/M/c with offered load a = λ/μ.
double erlangC(int c, double a)
{
    double term = 1, sum = 1; // Σ_{k<c} a^k/k!
    for (int k = 1; k < c; ++k) {
        term *= a / k;
        sum += term;
    }
    const double last = term * a / c; // a^c/c!
    const double rho = a / c;
    return last / (1 - rho) / (sum + last / (1 - rho));
}

} // namespace

class TestFleet : public QObject {
    Q_OBJECT
private slots:
    void routerPolicies()
    {
        std::vector<ReplicaLoad> loads(3);
        Router rr({RouterPolicy::RoundRobin, 3});
        QCOMPARE(rr.route(0, loads), 0);
        QCOMPARE(rr.route(0, loads), 1);
        QCOMPARE(rr.route(0, loads), 2);
        QCOMPARE(rr.route(0, loads), 0);
        const bool onlyLast[] = {false, false, true};
        QCOMPARE(rr.route(0, loads, onlyLast), 2);

        Router least({RouterPolicy::LeastOutstanding, 3});
        loads = {{4, 0}, {2, 900}, {3, 10}};
        QCOMPARE(least.route(0, loads), 1);
        Router kv({RouterPolicy::LeastKv, 3});
        QCOMPARE(kv.route(0, loads), 0);
        loads = {{4, 0}, {2, 0}, {3, 0}}; // no KV cache anywhere: least outstanding
        QCOMPARE(kv.route(0, loads), 1);

        QVERIFY(parseRouterPolicy("prefix-affinity") == RouterPolicy::PrefixAffinity);
        QVERIFY(!parseRouterPolicy("random"));
        for (RouterPolicy p : kRouterPolicies)
            QVERIFY(parseRouterPolicy(routerPolicyName(p)) == p);
    }

    // Affinity: a key always lands on its owner while the owner is within
    // ceil((1 + ε)·(total + 1)/N); past it, the least-outstanding replica.
    // Keys spread over the replicas.
    void affinityKeepsAPrefixUntilItsBound()
    {
        Router r({RouterPolicy::PrefixAffinity, 4, 0.25});
        const std::int64_t blocks[] = {7, 8, 9};
        const std::uint64_t key = prefixKeyOf(blocks, 2);
        QVERIFY(key != 0);
        QCOMPARE(prefixKeyOf(std::span<const std::int64_t>(blocks, 2), 2), key);
        QVERIFY(prefixKeyOf(blocks, 1) != key);
        const int owner = r.owner(key);
        std::vector<ReplicaLoad> loads(4, {2, 0}); // total 8: bound ceil(1.25·9/4) = 3
        QCOMPARE(r.route(key, loads), owner);
        loads[std::size_t(owner)].outstanding = 3; // total 9: bound ceil(1.25·10/4) = 4, 3 + 1 fits
        QCOMPARE(r.route(key, loads), owner);
        loads[std::size_t(owner)].outstanding = 4; // bound 4, 4 + 1 does not
        const int spilled = r.route(key, loads);
        QVERIFY(spilled != owner);
        QCOMPARE(r.counters().affinity, std::uint64_t(2));
        QCOMPARE(r.counters().spilled, std::uint64_t(1));
        std::set<int> owners;
        for (std::int64_t k = 1; k <= 64; ++k)
            owners.insert(r.owner(prefixKeyOf(std::span<const std::int64_t>(&k, 1))));
        QCOMPARE(owners.size(), std::size_t(4));
        // Token ids: a whole first block keys the prompt; a shorter prompt has no key.
        std::vector<TokenId> tokens(40, 5);
        QVERIFY(prefixKeyOfTokens(tokens) != 0);
        tokens[3] = 6;
        const auto k1 = prefixKeyOfTokens(tokens);
        tokens[20] = 9; // past the first block: the same key
        QCOMPARE(prefixKeyOfTokens(tokens), k1);
        QCOMPARE(prefixKeyOfTokens(std::span<const TokenId>(tokens.data(), 15)), std::uint64_t(0));
    }

    // On the virtual clock: 4 replicas of a 1 s server, 8 requests without
    // a key (least-outstanding: 2 on each), then a burst of one prefix with
    // ε = 0.5. The k-th of the burst finds total 8 + k − 1 outstanding and
    // the owner at 2 + k − 1: it stays while 2 + k <= ceil(1.5·(8 + k)/4),
    // i.e. for k = 1, 2, 3 (3 <= 4, 4 <= 4, 5 <= 5); the 4th (6 > 5) spills.
    // Once the burst has drained, the prefix goes back to its owner.
    void affinityInTheSimulator()
    {
        SimulatorOptions o = deterministic(1s, 4, RouterPolicy::PrefixAffinity);
        o.router.loadBound = 0.5;
        Collector records;
        o.observer = &records;
        const std::int64_t block = 42;
        const std::uint64_t key = prefixKeyOf(std::span<const std::int64_t>(&block, 1));
        // The router keys on an arrival's prefix blocks (prefixKeyOf(blocks)).
        auto arrival = [&](Duration at, bool keyed) {
            PlannedArrival a;
            a.offset = at;
            a.inputTokens = 10;
            if (keyed) {
                a.blocks = {block};
                a.blockTokens = 16;
            }
            return a;
        };
        std::vector<PlannedArrival> arrivals;
        for (int i = 0; i < 12; ++i)
            arrivals.push_back(arrival(Duration(i), i >= 8));
        arrivals.push_back(arrival(20s, true));
        const SimOutcome out = Simulator(o).run(arrivals);
        QCOMPARE(out.completed, arrivals.size());
        const int owner = Router({RouterPolicy::PrefixAffinity, 4, 0.5}).owner(key);
        std::map<std::uint64_t, int> replicaOf;
        for (const RequestRecord &r : records.requests)
            replicaOf[r.id] = r.replica;
        for (std::uint64_t id = 1; id <= 8; ++id)
            QCOMPARE(replicaOf[id], int((id - 1) % 4));
        QCOMPARE(replicaOf[9], owner);
        QCOMPARE(replicaOf[10], owner);
        QCOMPARE(replicaOf[11], owner);
        QVERIFY(replicaOf[12] != owner);
        QCOMPARE(replicaOf[13], owner);
        QCOMPARE(out.router.affinity, std::uint64_t(4));
        QCOMPARE(out.router.spilled, std::uint64_t(1));
        // batch ids stay unique across replicas
        std::set<std::uint64_t> ids;
        for (const BatchRecord &b : records.batches)
            QVERIFY(ids.insert(b.id).second);
    }

    // M/D/c: Poisson arrivals at λ, c servers of deterministic time D, one
    // FCFS queue — the fleet with the router's queue (limit 1 per replica,
    // least-outstanding, policy none). Mean wait against the Cosmetatos
    // approximation, Wq(M/D/c) ≈ ½·(1 + (1 − ρ)(c − 1)(√(4 + 5c) − 2)/(16ρc))·Wq(M/M/c)
    // (exact for c = 1; within ~1-2% of the exact M/D/c for these loads),
    // Wq(M/M/c) = C(c, a)·D/(c − a) from Erlang C. 60,000 arrivals, seeded:
    // within 8% (the sampling error of the mean at ρ = 0.8 is ~3%).
    void reproducesMDc_data()
    {
        QTest::addColumn<int>("c");
        QTest::addColumn<double>("rho");
        QTest::newRow("c 1, rho 0.7") << 1 << 0.7;
        QTest::newRow("c 2, rho 0.8") << 2 << 0.8;
        QTest::newRow("c 4, rho 0.8") << 4 << 0.8;
        QTest::newRow("c 8, rho 0.8") << 8 << 0.8;
    }
    void reproducesMDc()
    {
        QFETCH(int, c);
        QFETCH(double, rho);
        const double d = 0.01; // 10 ms
        const double lambda = rho * c / d;
        const auto arrivals = poisson(60'000, lambda, 7);
        SimulatorOptions o = deterministic(10ms, c, RouterPolicy::LeastOutstanding);
        o.routerQueueLimit = 1;
        Collector records;
        o.observer = &records;
        const SimOutcome out = Simulator(o).run(arrivals);
        QCOMPARE(out.completed, arrivals.size());
        QCOMPARE(out.replicas.size(), std::size_t(c));
        double sum = 0, routerSum = 0;
        for (const RequestRecord &r : records.requests) {
            QCOMPARE(r.total, r.queueWait + r.compute);
            QVERIFY(r.routerWait <= r.queueWait);
            sum += toSeconds(r.queueWait);
            routerSum += toSeconds(r.routerWait);
        }
        QCOMPARE(routerSum, sum); // the only queue is the router's
        const double mean = sum / double(records.requests.size());
        const double a = lambda * d;
        const double mmc = erlangC(c, a) * d / (c - a);
        const double cosmetatos =
            c == 1 ? rho * d / (2 * (1 - rho))
                   : 0.5 * (1 + (1 - rho) * (c - 1) * (std::sqrt(4.0 + 5 * c) - 2) / (16 * rho * c)) * mmc;
        QVERIFY2(std::abs(mean - cosmetatos) / cosmetatos < 0.08,
                 qPrintable(QStringLiteral("mean wait %1 ms, M/D/%2 %3 ms")
                                .arg(mean * 1e3)
                                .arg(c)
                                .arg(cosmetatos * 1e3)));
        double busy = 0;
        for (const ReplicaFigures &f : out.replicas)
            busy += f.busyS;
        QVERIFY(std::abs(busy - d * double(arrivals.size())) < 1e-6);
    }

    // Without the router's queue (dispatch on arrival), against the
    // central queue of M/D/c: with deterministic service, FCFS servers free
    // up in the order they started, so the central queue serves arrivals
    // cyclically — round-robin on arrival waits exactly as much — while
    // joining the shortest queue waits more (it cannot see that a queue of
    // 2 about to finish beats a fresh 1). least-kv without a KV cache is
    // least-outstanding.
    void routingOnArrivalAgainstTheCentralQueue()
    {
        const auto arrivals = poisson(30'000, 0.85 * 4 / 0.01, 3);
        auto meanWait = [&](RouterPolicy p, int limit) {
            SimulatorOptions o = deterministic(10ms, 4, p);
            o.routerQueueLimit = limit;
            Collector records;
            o.observer = &records;
            (void)Simulator(o).run(arrivals);
            double sum = 0;
            for (const RequestRecord &r : records.requests)
                sum += toSeconds(r.queueWait);
            return sum / double(records.requests.size());
        };
        const double central = meanWait(RouterPolicy::LeastOutstanding, 1);
        const double rr = meanWait(RouterPolicy::RoundRobin, 0);
        const double jsq = meanWait(RouterPolicy::LeastOutstanding, 0);
        const double kv = meanWait(RouterPolicy::LeastKv, 0);
        QVERIFY2(std::abs(rr - central) < 1e-9 && jsq > 1.1 * central && kv == jsq,
                 qPrintable(QStringLiteral("%1 %2 %3 %4").arg(central).arg(rr).arg(jsq).arg(kv)));
    }

    // A simulated replay on 3 replicas records the replica of every batch
    // and request, one replica_figures row each, and the fleet in the
    // session's replay facts.
    void fleetSessionIsRecorded()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        std::vector<TraceRow> rows;
        for (int i = 0; i < 600; ++i)
            rows.push_back({i * 0.004, 32, 0});
        const auto trace = store->addTrace("t", "", TraceFormat::Plain, rows).value().id;
        auto echo = makeEchoBackend(256, 2048);
        Calibration cal = Calibration::forModel(echo->info(), "", 1);
        cal.cost = CostModel{};
        cal.cost.coef[0] = 0.01;
        SimulatedReplay sim(store, cal);
        sim.setCostNoise(CostNoise::None);
        sim.setFleet(3, {RouterPolicy::RoundRobin, 3});
        ReplayOptions o;
        o.source = {ReplaySource::Kind::Trace, trace};
        BatchingConfig config;
        config.policy = PolicyKind::None;
        config.queueCapacity = 100000;
        o.config = config;
        auto outcome = sim.run(o);
        QVERIFY2(outcome, outcome.status().toString().c_str());
        QCOMPARE(outcome->completed, std::size_t(600));
        auto db = sqlite::Connection::open(store->path(), sqlite::Connection::Mode::ReadWrite).value();
        const std::string s = std::to_string(outcome->sessionId);
        for (int r = 0; r < 3; ++r) {
            const std::string where = " WHERE session_id = " + s + " AND replica = " + std::to_string(r);
            QCOMPARE(db.queryInt("SELECT count(*) FROM requests" + where).value(), std::int64_t(200));
            QCOMPARE(db.queryInt("SELECT count(*) FROM batches" + where).value(), std::int64_t(200));
        }
        QCOMPARE(db.queryInt("SELECT count(DISTINCT batch_id) FROM batches WHERE session_id = " + s).value(),
                 std::int64_t(600));
        auto figures = replicaFigures(*store, outcome->sessionId).value();
        QCOMPARE(figures.size(), std::size_t(3));
        for (const StoredReplica &f : figures) {
            QCOMPARE(f.routed, std::int64_t(200));
            QCOMPARE(f.completed, std::int64_t(200));
            QVERIFY(std::abs(f.busyS - 2.0) < 1e-6);
        }
        const auto info = store->session(outcome->sessionId).value();
        QCOMPARE(info.replay["fleet"]["replicas"].get<int>(), 3);
        QCOMPARE(info.replay["fleet"]["router"].get<std::string>(), std::string("round-robin"));
    }

    // The planner on a synthetic surface: window w needs need(w) replicas
    // with router A and one fewer with router B in odd windows. It finds
    // every minimum and router, in O(log) evaluations per window, with one
    // thread or two; cancelled, it keeps the windows done.
    void plannerFindsTheKnownMinimum_data()
    {
        QTest::addColumn<int>("threads");
        QTest::newRow("1 thread") << 1;
        QTest::newRow("2 threads") << 2;
    }
    void plannerFindsTheKnownMinimum()
    {
        QFETCH(int, threads);
        auto need = [](std::size_t w) { return 1 + int((w * 7) % 13) * 4; }; // 1 .. 49
        auto needed = [&](std::size_t w, RouterPolicy r) {
            return std::max(1, need(w) - (r == RouterPolicy::PrefixAffinity && w % 2 ? 1 : 0));
        };
        std::atomic<std::size_t> calls{0};
        WindowJudgeFactory factory = [&](std::size_t w) -> WindowJudge {
            return [&, w](int n, RouterPolicy r) {
                ++calls;
                PlanVerdict v;
                v.met = n >= needed(w, r);
                v.sloRatio = double(needed(w, r)) / n;
                return v;
            };
        };
        CapacitySearch s;
        s.minReplicas = 1;
        s.maxReplicas = 64;
        s.routers = {RouterPolicy::LeastOutstanding, RouterPolicy::PrefixAffinity};
        s.threads = threads;
        const std::size_t windows = 48;
        const FleetSearchResult found = searchCapacity(windows, factory, s);
        QVERIFY(!found.cancelled);
        for (std::size_t w = 0; w < windows; ++w) {
            const WindowChoice &c = found.windows[w];
            QVERIFY(c.done);
            const bool bWins = w % 2 && need(w) > 1;
            QCOMPARE(c.replicas,
                     needed(w, bWins ? RouterPolicy::PrefixAffinity : RouterPolicy::LeastOutstanding));
            QVERIFY(c.router == (bWins ? RouterPolicy::PrefixAffinity : RouterPolicy::LeastOutstanding));
            QVERIFY(c.verdict.met);
            // galloping + bisection over 64 counts: at most 2·log2(64) + 1
            // for the primary, the same again for the other router
            QVERIFY2(c.evaluations <= 26, qPrintable(QString::number(c.evaluations)));
        }
        QCOMPARE(found.evaluations, calls.load());
        QVERIFY(found.evaluations < windows * 64 / 4); // far from a scan

        // Not met anywhere in range: replicas 0.
        CapacitySearch small = s;
        small.maxReplicas = 4;
        const WindowChoice c = searchWindow(1, factory(1), small, 2); // need(1) = 29
        QVERIFY(c.done);
        QCOMPARE(c.replicas, 0);

        // Cancel after the 5th window: those stay, the rest are not done.
        std::atomic<bool> cancel{false};
        CapacitySearch cs = s;
        cs.threads = 1;
        cs.cancel = &cancel;
        cs.progress = [&](std::size_t done, std::size_t) {
            if (done == 5)
                cancel = true;
        };
        const FleetSearchResult part = searchCapacity(windows, factory, cs);
        QVERIFY(part.cancelled);
        std::size_t done = 0;
        for (const WindowChoice &w : part.windows)
            done += w.done;
        QCOMPARE(done, std::size_t(5));
        QVERIFY(part.windows[0].done && part.windows[4].done && !part.windows[5].done);
    }

    // The whole planner on a stored trace: two windows of 10 s, the second
    // at 3× the first's rate, a 10 ms server, p99 <= 30 ms: the second needs
    // more replicas; the plan's figures meet the SLO and cost follows.
    void planFleetOnATrace()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        std::vector<TraceRow> rows;
        std::mt19937_64 rng(5);
        for (double rate : {150.0, 450.0}) {
            std::exponential_distribution<double> gap(rate);
            const double begin = rows.empty() ? 0 : 10.0;
            for (double t = begin + gap(rng); t < begin + 10; t += gap(rng))
                rows.push_back({t, 16, 1});
        }
        rows.front().arrivalS = 0;
        const auto trace = store->addTrace("t", "", TraceFormat::Plain, rows).value().id;
        auto echo = makeEchoBackend(256, 2048);
        Calibration cal = Calibration::forModel(echo->info(), "", 1);
        cal.cost = CostModel{};
        cal.cost.coef[0] = 0.01;
        FleetPlanRequest r;
        r.source = {ReplaySource::Kind::Trace, trace};
        r.window = 10s;
        r.slo.e2eP99 = 30ms;
        r.config.policy = PolicyKind::None;
        r.config.queueCapacity = 100000;
        r.search.maxReplicas = 16;
        r.noise = CostNoise::None;
        r.replicaCostPerHour = 2.0;
        auto plan = planFleet(*store, cal, r);
        QVERIFY2(plan, plan.status().toString().c_str());
        QCOMPARE(plan->windows.size(), std::size_t(2));
        const int first = plan->windows[0].choice.replicas, second = plan->windows[1].choice.replicas;
        QVERIFY2(first >= 2 && second > first, qPrintable(QStringLiteral("%1 %2").arg(first).arg(second)));
        for (const PlannedWindow &w : plan->windows) {
            QVERIFY(w.choice.verdict.met);
            QVERIFY(w.choice.verdict.p99S <= 0.030);
        }
        QCOMPARE(plan->peakReplicas, second);
        QVERIFY(plan->daily.empty()); // 20 s of trace: no day to lay out
        QVERIFY(std::abs(plan->cost - 2.0 * (first + second) * 10 / 3600) < 1e-9);
        // one replica fewer misses in each window (the minimum is the minimum)
        auto doc = planDocument(*plan, r, cal);
        QCOMPARE(doc["windows"][1]["replicas"].get<int>(), second);
        QVERIFY(doc.contains("cost"));
    }

    // import-trace --repeat-to: an hour's rows repeated to a day, each copy
    // one mean gap after the last; the windows of the store's streaming read
    // each hold one copy.
    void importRepeatsToALength()
    {
        QTemporaryDir dir;
        auto store = TraceStore::open(dir.filePath("t.sqlite").toStdString()).value();
        QFile csv(dir.filePath("hour.csv"));
        QVERIFY(csv.open(QIODevice::WriteOnly));
        csv.write("arrival_s,input_tokens,output_tokens\n");
        for (int i = 0; i <= 10; ++i) // 0, 360, ..., 3600 s: a mean gap of 360 s
            csv.write(QStringLiteral("%1,%2,1\n").arg(i * 360).arg(10 + i).toUtf8());
        csv.close();
        ImportOptions o;
        o.repeatTo = 24h;
        o.format = TraceFormat::Plain;
        auto imported = store->importTrace(csv.fileName().toStdString(), o);
        QVERIFY2(imported, imported.status().toString().c_str());
        // period 3600 + 360 s: ceil(86400 / 3960) = 22 copies
        QCOMPARE(imported->trace.rows, std::uint64_t(22 * 11));
        const auto rows = store->traceRows(imported->trace.id).value();
        QCOMPARE(rows[11].arrivalS, 3960.0);
        QCOMPARE(rows[11].inputTokens, 10);
        const auto starts = store->traceWindowStarts(imported->trace.id, 3960s).value();
        QCOMPARE(starts.size(), std::size_t(23));
        for (std::size_t k = 0; k < starts.size(); ++k)
            QCOMPARE(starts[k], std::int64_t(11 * k));
        std::vector<TraceRow> slice;
        std::vector<PrefixBlocks> ids;
        QVERIFY(store->traceSlice(imported->trace.id, 11, 22, slice, ids));
        QCOMPARE(slice.size(), std::size_t(11));
        QCOMPARE(slice.front().arrivalS, 3960.0);
        QVERIFY(ids.empty());
    }

    // The plan in each stack's form: the peak, the least and the hourly schedule.
    void exportsThePlan()
    {
        nlohmann::json plan = {
            {"slo", "p99 <= 2 s"},
            {"peak_replicas", 5},
            {"daily_schedule", std::vector<int>(24, 2)},
            {"windows",
             {{{"done", true}, {"replicas", 2}, {"replica_busy", {0.5, 0.4}}},
              {{"done", true}, {"replicas", 5}, {"replica_busy", {0.7, 0.8, 0.6, 0.7, 0.5}}}}}};
        const std::string ray = exportFleetPlan(plan, "ray-serve").value();
        QVERIFY(ray.find("min_replicas: 2") != std::string::npos);
        QVERIFY(ray.find("max_replicas: 5") != std::string::npos);
        QVERIFY(ray.find("num_replicas: 5") != std::string::npos);
        const std::string vllm = exportFleetPlan(plan, "vllm").value();
        QVERIFY(vllm.find("--data-parallel-size 5\n") != std::string::npos);
        QVERIFY(vllm.find("23:00  --data-parallel-size 2") != std::string::npos);
        const std::string hpa = exportFleetPlan(plan, "hpa").value();
        QVERIFY(hpa.find("minReplicas: 2") != std::string::npos);
        QVERIFY(hpa.find("maxReplicas: 5") != std::string::npos);
        QVERIFY(hpa.find("desiredReplicas: \"2\"") != std::string::npos);
        QVERIFY(!exportFleetPlan(plan, "triton"));
    }
};

QTEST_GUILESS_MAIN(TestFleet)
#include "test_fleet.moc"
